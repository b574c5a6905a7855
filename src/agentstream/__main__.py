import sys

from agentstream.cli import main

sys.exit(main())
