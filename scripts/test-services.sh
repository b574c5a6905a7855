#!/usr/bin/env bash
# Services the test suite needs that pip cannot install.
set -euo pipefail
bash "$(dirname "$0")/postgres.sh"
