/* SPDX-License-Identifier: Apache-2.0 */
/*
 * Tracepoints as calls into the harness: TRACE_EVENT(name, ...) gives
 * trace_name(), which calls kshim_name(), and trace_name_enabled().
 */
#ifndef HMB_KSHIM_TRACEPOINT_H
#define HMB_KSHIM_TRACEPOINT_H
#include <kshim.h>

extern bool kshim_trace_enabled;
#define TP_PROTO(...)	__VA_ARGS__
#define TP_ARGS(...)	__VA_ARGS__
#define TRACE_EVENT(name, proto, args, tstruct, assign, print)	\
	void kshim_##name(proto);					\
	static inline void trace_##name(proto)				\
	{								\
		kshim_##name(args);					\
	}								\
	static inline bool trace_##name##_enabled(void)		\
	{								\
		return kshim_trace_enabled;				\
	}
#define DECLARE_EVENT_CLASS(name, proto, args, tstruct, assign, print)
#define DEFINE_EVENT(class, name, proto, args)			\
	TRACE_EVENT(name, PARAMS(proto), PARAMS(args), , , )
#define PARAMS(...)	__VA_ARGS__
#endif
