/* aws.c: AWS credentials and region for Bedrock (see aws.h). */
#include "llm/aws.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/json.h"
#include "core/util.h"
#include "llm/llm.h"

/* AWS's shared files are small; a bigger one is not read. */
#define INI_MAX (1u << 20)

static char *read_small(const char *path)
{
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	char *data = malloc(INI_MAX + 1);
	if (!data)
		return NULL;
	size_t len = 0;
	ssize_t n;
	while (len < INI_MAX && (n = read(fd, data + len, INI_MAX - len)) > 0)
		len += (size_t)n;
	data[len] = '\0';
	return data;
}

static char *trim(char *s, char *end)
{
	while (s < end && (*s == ' ' || *s == '\t'))
		s++;
	while (end > s && (end[-1] == ' ' || end[-1] == '\t' || end[-1] == '\r'))
		end--;
	*end = '\0';
	return s;
}

int llm_aws_ini_get(const char *path, const char *section, const char *key, char *out, size_t n)
{
	char *data = read_small(path);
	if (!data)
		return -ENOENT;
	int r = -ENOENT;
	bool in = false;
	for (char *line = data, *next; line && *line; line = next) {
		char *nl = strchr(line, '\n');
		next = nl ? nl + 1 : NULL;
		char *end = nl ? nl : line + strlen(line);
		char *s = trim(line, end);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			char *close = strchr(s, ']');
			if (!close)
				continue;
			char *name = trim(s + 1, close);
			in = strcmp(name, section) == 0;
			continue;
		}
		char *eq = strchr(s, '=');
		if (!in || !eq)
			continue;
		char *k = trim(s, eq);
		if (strcmp(k, key) != 0)
			continue;
		char *v = trim(eq + 1, eq + 1 + strlen(eq + 1));
		if (strlen(v) >= n) {
			r = -E2BIG;
		} else {
			memcpy(out, v, strlen(v) + 1);
			r = 0;
		}
		break;
	}
	explicit_bzero(data, strlen(data));
	free(data);
	return r;
}

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && v[0] ? v : NULL;
}

/* $VAR, else ~/.aws/NAME. */
static void aws_file(const char *var, const char *name, char *out, size_t n)
{
	const char *p = env(var);
	const char *home = env("HOME");
	if (p)
		snprintf(out, n, "%s", p);
	else if (home)
		snprintf(out, n, "%s/.aws/%s", home, name);
	else
		out[0] = '\0';
}

static int set(char **dst, const char *v)
{
	if (!v)
		return 0;
	*dst = strdup(v);
	return *dst ? 0 : -ENOMEM;
}

/* A region goes into a host name and the signing scope. */
static bool region_valid(const char *r)
{
	if (!r[0] || strlen(r) > 32)
		return false;
	for (const char *p = r; *p; p++)
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-'))
			return false;
	return true;
}

int llm_aws_resolve(struct llm_config *c, json_object *section, char *detail, size_t dsz)
{
	const char *profile = env("AWS_PROFILE");
	if (!profile)
		profile = "default";
	char cred_path[1024], conf_path[1024], conf_section[300];
	aws_file("AWS_SHARED_CREDENTIALS_FILE", "credentials", cred_path, sizeof(cred_path));
	aws_file("AWS_CONFIG_FILE", "config", conf_path, sizeof(conf_path));
	if (strcmp(profile, "default") == 0)
		snprintf(conf_section, sizeof(conf_section), "default");
	else
		snprintf(conf_section, sizeof(conf_section), "profile %s", profile);

	/* The region. */
	char buf[4096];
	const char *region = NULL;
	if (json_get_string(section, "region", &region) == -EINVAL) {
		snprintf(detail, dsz, "llm.region must be a string");
		return -EINVAL;
	}
	if (region && !region[0])
		region = NULL;
	if (!region)
		region = env("AWS_REGION");
	if (!region)
		region = env("AWS_DEFAULT_REGION");
	if (!region && llm_aws_ini_get(conf_path, conf_section, "region", buf, sizeof(buf)) == 0)
		region = buf;
	if (!region) {
		snprintf(detail, dsz,
		         "Bedrock needs a region: set AWS_REGION (or llm.region, or region in the "
		         "[%s] section of %s)",
		         conf_section, conf_path);
		return -EINVAL;
	}
	if (!region_valid(region)) {
		snprintf(detail, dsz, "'%.40s' is not an AWS region (like us-east-1)", region);
		return -EINVAL;
	}
	if (set(&c->region, region) < 0)
		return -ENOMEM;
	if (!c->url) {
		snprintf(buf, sizeof(buf), "https://bedrock-runtime.%s.amazonaws.com", c->region);
		if (set(&c->url, buf) < 0)
			return -ENOMEM;
	}

	/* A Bedrock API key needs no key pair. */
	const char *bearer = env("AWS_BEARER_TOKEN_BEDROCK");
	if (!c->api_key && bearer && set(&c->api_key, bearer) < 0)
		return -ENOMEM;
	if (c->api_key)
		return 0;

	/* The key pair: both from the environment, else both from a file. */
	const char *id = env("AWS_ACCESS_KEY_ID"), *secret = env("AWS_SECRET_ACCESS_KEY");
	if (id && secret) {
		if (set(&c->aws_access_key, id) < 0 || set(&c->aws_secret_key, secret) < 0 ||
		    set(&c->aws_session_token, env("AWS_SESSION_TOKEN")) < 0)
			return -ENOMEM;
		return 0;
	}
	const char *paths[2] = {cred_path, conf_path};
	const char *sections[2] = {profile, conf_section};
	for (int i = 0; i < 2; i++) {
		char kid[256], ksec[256];
		if (llm_aws_ini_get(paths[i], sections[i], "aws_access_key_id", kid, sizeof(kid)) <
		        0 ||
		    llm_aws_ini_get(paths[i], sections[i], "aws_secret_access_key", ksec,
		                    sizeof(ksec)) < 0)
			continue;
		int r = set(&c->aws_access_key, kid);
		if (r == 0)
			r = set(&c->aws_secret_key, ksec);
		explicit_bzero(ksec, sizeof(ksec));
		if (r == 0 && llm_aws_ini_get(paths[i], sections[i], "aws_session_token", buf,
		                              sizeof(buf)) == 0)
			r = set(&c->aws_session_token, buf);
		explicit_bzero(buf, sizeof(buf));
		return r;
	}
	snprintf(detail, dsz,
	         "no AWS credentials for Bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY "
	         "(and AWS_SESSION_TOKEN), or put them in the [%s] section of %s, or use a Bedrock "
	         "API key (llm.apiKey or AWS_BEARER_TOKEN_BEDROCK)",
	         profile, cred_path);
	return -EINVAL;
}
