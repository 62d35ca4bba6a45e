/* egress.c: libFuzzer harness for what the egress proxy parses of bytes
 * an agent sends (lib/egress/egress.c): the request head, the authority, and the
 * address guard over any address.  Beyond not crashing, it checks what
 * the proxy relies on: an accepted request names a host of plain
 * lowercase labels and a port in range, and never an IP literal. */
#include <netinet/in.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "egress.h"

static void check_host(const char *host, int port)
{
	size_t i, n = strlen(host);

	if (n == 0 || n > AB_EGRESS_HOST_MAX || port < 1 || port > 65535)
		abort();
	for (i = 0; i < n; i++)
		if (!((host[i] >= 'a' && host[i] <= 'z') ||
		    (host[i] >= '0' && host[i] <= '9') || host[i] == '-' ||
		    host[i] == '.'))
			abort();
	if (host[n - 1] == '.' || host[0] == '.' || host[0] == '-')
		abort();
}

static void guard(const uint8_t *data, size_t size)
{
	struct sockaddr_in6 v6;
	struct sockaddr_in v4;

	if (size < 16)
		return;
	memset(&v6, 0, sizeof v6);
	v6.sin6_family = AF_INET6;
	memcpy(&v6.sin6_addr, data, 16);
	ab_egress_guard((struct sockaddr *)&v6);
	memset(&v4, 0, sizeof v4);
	v4.sin_family = AF_INET;
	memcpy(&v4.sin_addr, data, 4);
	ab_egress_guard((struct sockaddr *)&v4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char host[AB_EGRESS_HOST_MAX + 1];
	const char *p = (const char *)data;
	int port = 0, status = 0;

	if (size > AB_EGRESS_HEAD_MAX)
		return 0;
	ab_egress_head_len(p, size);
	if (ab_egress_request(p, size, host, &port, &status) == NULL)
		check_host(host, port);
	else if (status != 400 && status != 405)
		abort();
	if (ab_egress_authority(p, size, host, &port) == NULL)
		check_host(host, port);
	guard(data, size);
	return 0;
}
