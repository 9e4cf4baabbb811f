// SPDX-License-Identifier: GPL-2.0
/*
 * trace.c - instantiates the hmb_trace tracepoints.
 */
#define CREATE_TRACE_POINTS
#include "hmb_trace_events.h"

EXPORT_TRACEPOINT_SYMBOL_GPL(hmb_trace_record);
EXPORT_TRACEPOINT_SYMBOL_GPL(hmb_trace_records);
