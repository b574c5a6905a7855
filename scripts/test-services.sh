#!/usr/bin/env bash
# Services the test suite needs that pip cannot install. Filled in as parts land.
set -euo pipefail
