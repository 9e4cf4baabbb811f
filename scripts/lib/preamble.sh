# SPDX-License-Identifier: Apache-2.0
# The preamble of the project's host-side bash scripts.  Source it first,
# by its path from the script:
#   . "$(dirname "$0")/../lib/preamble.sh"
# It sets -e and -u and defines
#   top       the repository's root, absolute
#   prog      the script's name, for its messages
#   die MSG   "PROG: error: MSG" on stderr, then exit 1
# A script that reports a failed step and goes on (a TAP script, the
# check and bench drivers) turns -e off again (set +e); one that needs
# pipefail sets it.
set -eu
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
prog=${0##*/}
die() { echo "$prog: error: $*" >&2; exit 1; }
