/* aws.h: finding AWS credentials and the region the way AWS's own tools
 * do, for the Bedrock provider: the environment first (AWS_ACCESS_KEY_ID,
 * AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN, AWS_REGION,
 * AWS_DEFAULT_REGION), then the [default] or AWS_PROFILE section of
 * ~/.aws/credentials (AWS_SHARED_CREDENTIALS_FILE) and ~/.aws/config
 * (AWS_CONFIG_FILE, where it is [profile NAME]). A Bedrock API key
 * (llm.apiKey, KILN_API_KEY, AWS_BEARER_TOKEN_BEDROCK) replaces the key
 * pair. Values are copied into the config, zeroed when it is released, and
 * never logged. */
#pragma once

#include <json-c/json.h>
#include <stddef.h>

struct llm_config;

/* Fill c's region, credentials and (when c->url is NULL) the regional
 * endpoint. llm.region in section wins over the environment. -EINVAL
 * with a sentence in detail when no region or no credentials are found,
 * -ENOMEM. */
int llm_aws_resolve(struct llm_config *c, json_object *section, char *detail, size_t dsz);

/* The value of key in section [name] of the INI file at path (AWS's
 * shared config format: "key = value", '#' and ';' comments), into out.
 * 0, -ENOENT (no file, section or key), -E2BIG. */
int llm_aws_ini_get(const char *path, const char *section, const char *key, char *out, size_t n);
