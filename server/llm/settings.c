/* settings.c: resolving the model endpoint's configuration from the "llm"
 * section (config file overlaid by initializationOptions), the environment
 * and the defaults, in that order of precedence. */
#include "llm/llm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"

#define DEFAULT_PROVIDER "ollama"

const struct llm_ops *llm_provider(const char *name)
{
	static const struct llm_ops *const all[] = {&llm_ollama_ops, &llm_openai_ops,
	                                            &llm_anthropic_ops, &llm_bedrock_ops};
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
		if (strcmp(all[i]->name, name) == 0)
			return all[i];
	/* Names people use for OpenAI-compatible servers. */
	if (!strcmp(name, "openai-compatible") || !strcmp(name, "vllm") ||
	    !strcmp(name, "llama.cpp") || !strcmp(name, "lmstudio"))
		return &llm_openai_ops;
	return NULL;
}

/* A string setting: the section's member, else the environment variable,
 * else NULL in *ret. *src says which. A member of another type is an
 * error naming it, never quietly passed over for the environment. */
static int pick(json_object *section, const char *key, const char *env, const char **ret,
                const char **src, char *detail, size_t dsz)
{
	const char *v = NULL;
	int r = json_get_string(section, key, &v);
	if (r == -EINVAL) {
		snprintf(detail, dsz, "llm.%s must be a string, not %s", key,
		         json_type_to_name(json_object_get_type(json_get(section, key))));
		return r;
	}
	if (r == 0 && v[0]) {
		*src = "config";
		*ret = v;
		return 0;
	}
	v = env ? getenv(env) : NULL;
	if (v && v[0]) {
		*src = "env";
		*ret = v;
		return 0;
	}
	*ret = NULL;
	return 0;
}

static int pick_ms(json_object *section, const char *key, uint64_t def, uint64_t *out, char *detail,
                   size_t dsz)
{
	int64_t v;
	int r = json_get_int64(section, key, &v);
	if (r == -ENOENT) {
		*out = def;
		return 0;
	}
	if (r < 0 || v < 0) {
		snprintf(detail, dsz, "llm.%s must be a non-negative number", key);
		return -EINVAL;
	}
	*out = (uint64_t)v;
	return 0;
}

/* Keys should not linger in freed memory a core dump shows. */
static void free_secret(char *s)
{
	if (s) {
		explicit_bzero(s, strlen(s));
		free(s);
	}
}

void llm_config_release(struct llm_config *c)
{
	free(c->provider);
	free(c->url);
	free(c->model);
	free(c->region);
	free_secret(c->api_key);
	free_secret(c->aws_access_key);
	free_secret(c->aws_secret_key);
	free_secret(c->aws_session_token);
	*c = (struct llm_config){0};
}

static int dup_opt(const char *s, char **ret)
{
	*ret = s ? strdup(s) : NULL;
	return s && !*ret ? -ENOMEM : 0;
}

int llm_config_copy(const struct llm_config *c, struct llm_config *ret)
{
	struct llm_config d = *c;
	d.provider = d.url = d.model = d.api_key = NULL;
	d.aws_access_key = d.aws_secret_key = d.aws_session_token = d.region = NULL;
	if (dup_opt(c->provider, &d.provider) < 0 || dup_opt(c->url, &d.url) < 0 ||
	    dup_opt(c->model, &d.model) < 0 || dup_opt(c->api_key, &d.api_key) < 0 ||
	    dup_opt(c->aws_access_key, &d.aws_access_key) < 0 ||
	    dup_opt(c->aws_secret_key, &d.aws_secret_key) < 0 ||
	    dup_opt(c->aws_session_token, &d.aws_session_token) < 0 ||
	    dup_opt(c->region, &d.region) < 0) {
		llm_config_release(&d);
		return -ENOMEM;
	}
	*ret = d;
	return 0;
}

int llm_config_resolve(json_object *section, struct llm_config *ret, char *detail, size_t dsz)
{
	struct llm_config c = {.temperature = -1};
	const char *src = "default";
	const char *provider, *url, *model, *key;
	if (pick(section, "provider", "KILN_LLM_PROVIDER", &provider, &src, detail, dsz) < 0)
		return -EINVAL;
	if (!provider)
		provider = DEFAULT_PROVIDER;
	c.ops = llm_provider(provider);
	if (!c.ops) {
		snprintf(detail, dsz,
		         "unknown model provider '%s' (llm.provider or KILN_LLM_PROVIDER): use "
		         "\"ollama\", \"openai\", \"anthropic\" or \"bedrock\"",
		         provider);
		return -EINVAL;
	}
	src = "default";
	if (pick(section, "url", "KILN_LLM_URL", &url, &src, detail, dsz) < 0)
		return -EINVAL;
	c.url_source = src;
	src = "default";
	if (pick(section, "model", "KILN_MODEL", &model, &src, detail, dsz) < 0 ||
	    pick(section, "apiKey", "KILN_API_KEY", &key, &src, detail, dsz) < 0)
		return -EINVAL;
	if (!model)
		model = c.ops->default_model;
	if (!url)
		url = c.ops->default_url;

	if (url && strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
		snprintf(detail, dsz, "llm.url must start with http:// or https:// (got '%s')",
		         url);
		return -EINVAL;
	}
	c.provider = strdup(c.ops->name);
	c.url = url ? strdup(url) : NULL;
	c.model = strdup(model);
	c.api_key = key ? strdup(key) : NULL;
	if (!c.provider || (url && !c.url) || !c.model || (key && !c.api_key)) {
		llm_config_release(&c);
		return -ENOMEM;
	}
	if (c.ops->resolve) {
		int r = c.ops->resolve(&c, section, detail, dsz);
		if (r < 0) {
			llm_config_release(&c);
			return r;
		}
	}
	/* Accept a base URL given with the API's prefix or a trailing
	 * slash ("http://host:8000/v1/"), as OpenAI's clients take it. */
	size_t n = strlen(c.url);
	while (n > 0 && c.url[n - 1] == '/')
		c.url[--n] = '\0';
	size_t sl = c.ops->base_suffix ? strlen(c.ops->base_suffix) : 0;
	if (sl && n >= sl && strcmp(c.url + n - sl, c.ops->base_suffix) == 0)
		c.url[n - sl] = '\0';

	json_object *t = json_get(section, "temperature");
	if (t) {
		if (!json_object_is_type(t, json_type_double) &&
		    !json_object_is_type(t, json_type_int)) {
			snprintf(detail, dsz, "llm.temperature must be a number");
			goto bad;
		}
		c.temperature = json_object_get_double(t);
	}
	if (json_get_int64(section, "maxTokens", &c.max_tokens) == -EINVAL) {
		snprintf(detail, dsz, "llm.maxTokens must be an integer");
		goto bad;
	}
	uint64_t max_resp, hist;
	if (pick_ms(section, "connectTimeoutMs", 5000, &c.connect_timeout_ms, detail, dsz) < 0 ||
	    pick_ms(section, "idleTimeoutMs", 60000, &c.idle_timeout_ms, detail, dsz) < 0 ||
	    pick_ms(section, "totalTimeoutMs", 600000, &c.total_timeout_ms, detail, dsz) < 0 ||
	    pick_ms(section, "maxResponseBytes", 1u << 20, &max_resp, detail, dsz) < 0 ||
	    pick_ms(section, "historyTokens", 4096, &hist, detail, dsz) < 0)
		goto bad;
	c.max_response = max_resp ? (size_t)max_resp : 1u << 20;
	bool cache = false;
	if (json_get_bool(section, "cache", &cache) == -EINVAL) {
		snprintf(detail, dsz, "llm.cache must be true or false");
		goto bad;
	}
	c.cache = cache;
	if (pick_ms(section, "cacheMaxBytes", 64u << 20, &c.cache_max_bytes, detail, dsz) < 0)
		goto bad;
	c.history_tokens = (int64_t)hist;
	*ret = c;
	return 0;
bad:
	llm_config_release(&c);
	return -EINVAL;
}
