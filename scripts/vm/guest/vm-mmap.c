// SPDX-License-Identifier: Apache-2.0
/*
 * vm-mmap: look at a file through mmap(2), for the VM bench's guest, where
 * the ivshmem BAR (sysfs resource2) can only be reached that way.
 *
 *   vm-mmap FILE size                 print the mappable size in bytes
 *   vm-mmap FILE read OFFSET LENGTH   print LENGTH bytes at OFFSET as hex
 *   vm-mmap FILE write OFFSET HEX     store the bytes HEX at OFFSET
 *   vm-mmap FILE fill OFFSET LENGTH BYTE
 *   vm-mmap FILE touch LENGTH         map LENGTH bytes read-only, read a byte
 *                                     of every page, print {"pages":N,
 *                                     "faults":F}: the page faults that took
 *                                     (0 when ->mmap made every PTE; FILE may
 *                                     be a character device, whose size is 0)
 *
 * OFFSET, LENGTH and BYTE take C notation (0x10, 16).  Exit 0 on success,
 * 1 on an error (named on stderr), 2 on bad usage.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "hmbtrace_util.h"

static void usage(void)
{
	fprintf(stderr,
		"usage: vm-mmap FILE size\n"
		"       vm-mmap FILE read OFFSET LENGTH\n"
		"       vm-mmap FILE write OFFSET HEX\n"
		"       vm-mmap FILE fill OFFSET LENGTH BYTE\n"
		"       vm-mmap FILE touch LENGTH\n"
		"example: vm-mmap /sys/bus/pci/devices/0000:00:04.0/resource2 read 0 16\n");
	exit(2);
}

/* one number parser: libhmbtrace's (decimal, or hex after 0x) */
static uint64_t num(const char *s, const char *what)
{
	uint64_t v;

	if (hmb_parse_u64(s, 0, 0, UINT64_MAX, &v)) {
		fprintf(stderr, "vm-mmap: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static long faults_now(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru)) {
		fprintf(stderr, "vm-mmap: getrusage: %s\n", strerror(errno));
		exit(1);
	}
	return ru.ru_minflt + ru.ru_majflt;
}

/* Map @len bytes of @fd read-only and count the faults of reading them. */
static int touch(int fd, const char *file, uint64_t len)
{
	long page = sysconf(_SC_PAGESIZE), f0;
	volatile const unsigned char *map;
	uint64_t pages = 0, i;
	unsigned int sum = 0;

	if (!len)
		usage();
	map = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "vm-mmap: mmap %s (%llu bytes): %s\n", file,
			(unsigned long long)len, strerror(errno));
		return 1;
	}
	f0 = faults_now();
	for (i = 0; i < len; i += (uint64_t)page, pages++)
		sum += map[i];
	printf("{\"pages\":%llu,\"faults\":%ld,\"sum\":%u}\n",
	       (unsigned long long)pages, faults_now() - f0, sum);
	return 0;
}

int main(int argc, char **argv)
{
	const char *file, *verb;
	uint64_t size, off = 0, len = 0;
	int writing, fd;
	struct stat st;
	unsigned char *map;

	if (argc < 3)
		usage();
	file = argv[1];
	verb = argv[2];
	writing = !strcmp(verb, "write") || !strcmp(verb, "fill");
	if (!strcmp(verb, "size")) {
		if (argc != 3)
			usage();
	} else if (!strcmp(verb, "read") || !strcmp(verb, "write")) {
		if (argc != 5)
			usage();
	} else if (!strcmp(verb, "fill")) {
		if (argc != 6)
			usage();
	} else if (!strcmp(verb, "touch")) {
		if (argc != 4)
			usage();
	} else {
		usage();
	}
	fd = open(file, writing ? O_RDWR : O_RDONLY);
	if (fd < 0) {
		fprintf(stderr, "vm-mmap: open %s: %s\n", file, strerror(errno));
		return 1;
	}
	if (fstat(fd, &st)) {
		fprintf(stderr, "vm-mmap: stat %s: %s\n", file, strerror(errno));
		return 1;
	}
	if (!strcmp(verb, "touch"))
		return touch(fd, file, num(argv[3], "length"));
	size = (uint64_t)st.st_size;
	if (!strcmp(verb, "size")) {
		printf("%llu\n", (unsigned long long)size);
		return 0;
	}
	off = num(argv[3], "offset");
	if (!strcmp(verb, "write")) {
		len = strlen(argv[4]);
		if (len % 2) {
			fprintf(stderr, "vm-mmap: odd number of hex digits\n");
			return 2;
		}
		len /= 2;
	} else {
		len = num(argv[4], "length");
	}
	if (off > size || len > size - off) {
		fprintf(stderr, "vm-mmap: %llu bytes at %llu do not fit in %s (%llu bytes)\n",
			(unsigned long long)len, (unsigned long long)off, file,
			(unsigned long long)size);
		return 1;
	}
	if (!size || !len)
		return 0;
	map = mmap(NULL, size, writing ? PROT_READ | PROT_WRITE : PROT_READ,
		   MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		fprintf(stderr, "vm-mmap: mmap %s (%llu bytes): %s\n", file,
			(unsigned long long)size, strerror(errno));
		return 1;
	}
	if (!strcmp(verb, "read")) {
		for (uint64_t i = 0; i < len; i++)
			printf("%02x", map[off + i]);
		printf("\n");
	} else if (!strcmp(verb, "write")) {
		for (uint64_t i = 0; i < len; i++) {
			int hi = hexval(argv[4][2 * i]), lo = hexval(argv[4][2 * i + 1]);

			if (hi < 0 || lo < 0) {
				fprintf(stderr, "vm-mmap: bad hex digit in '%s'\n", argv[4]);
				return 2;
			}
			map[off + i] = (unsigned char)(hi << 4 | lo);
		}
	} else {
		uint64_t b = num(argv[5], "byte");

		if (b > 255) {
			fprintf(stderr, "vm-mmap: byte %llu > 255\n", (unsigned long long)b);
			return 2;
		}
		memset(map + off, (int)b, len);
	}
	if (writing && msync(map, size, MS_SYNC) && errno != EINVAL) {
		fprintf(stderr, "vm-mmap: msync %s: %s\n", file, strerror(errno));
		return 1;
	}
	return 0;
}
