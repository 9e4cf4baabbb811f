# SPDX-License-Identifier: Apache-2.0
# The guest suites' way to the project's TAP library (scripts/lib/tap.sh,
# which says how to use it); every suite runs with HMB_REPO set.
. "$HMB_REPO/scripts/lib/tap.sh"
