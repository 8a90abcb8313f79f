/* config.c: the "sandbox" section checked, member by member, and
 * resolved into struct sbx_config (see config.h). */
#include "sandbox/config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/util.h"
#include "sandbox/box/plan.h"
#include "sandbox/host/host.h"

/* Members of the section, so that a misspelt one is an error rather
 * than a setting silently not applied. */
static const char *const known[] = {
    "limits",
    "maxLimits",
    "env",
    "warmBoxes",
    "cgroup",
    "languages",
    "artifactDir",
    "artifactInlineBytes",
    "artifactMaxFiles",
    "artifactMaxBytes",
    "workspace",
    "sessionIdleMs",
    "artifactDirMaxBytes",
    "artifactDirMaxAgeMs",
    "maxConcurrentRuns",
    "maxQueuedRuns",
    "zygote",
    "zygotePreload",
    "python",
};

/* Credentials and keys that a project folder (or a home folder) often
 * holds, by name: hidden from every run. sandbox.workspace.hide adds to
 * this list; only sandbox.workspace.hideReplacingDefaults replaces it.
 * Besides .git and environment files, the names are those of gitrob's
 * file signatures (the list shhgit and later name-based scanners carried
 * on) that hold credentials rather than may hold them: keys, key stores,
 * password stores, tokens, shell histories, cloud and registry logins.
 * Project data that such lists also flag (*.sqlite, *.log, database.yml,
 * settings.py) stays visible: it is what the code is asked to work on. */
const char *const sbx_default_hide[] = {
    /* version control, environment files, keys */
    ".git", ".env", ".env.*", "*.pem", "*.key", "id_*", "*_rsa", "*_dsa", "*_ecdsa", "*_ed25519",
    "*.ppk", "*.p12", "*.pfx", "*.pkcs12", "*.jks", "*.keystore",
    /* logins kept in the home folder's layout */
    ".ssh", ".aws", ".azure", ".gnupg", ".docker", ".dockercfg", ".kube", "kubeconfig",
    "*.kubeconfig", ".netrc", "_netrc", ".npmrc", ".pypirc", ".pgpass", ".git-credentials",
    ".s3cfg", ".boto", ".vault-token", ".htpasswd",
    /* cloud credentials and infrastructure state */
    "credentials.json", "service-account*.json", "client_secret*.json",
    "application_default_credentials.json", "*.tfstate", "*.tfstate.backup", "terraform.tfvars",
    ".terraformrc", "credentials.tfrc.json",
    /* password stores, VPN profiles, shell histories */
    "*.kdbx", "*.keychain", "*.agilekeychain", "*.psafe3", "*.ovpn", ".*_history", NULL};

static void free_hide(char **hide, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(hide[i]);
	free(hide);
}

/* One list of name patterns from the configuration (sandbox.workspace.KEY),
 * appended to list[*n]: each a file name pattern of 1 to 255 bytes, no '/'. */
static int hide_patterns(json_object *v, const char *key, char **list, size_t *n, char *err,
                         size_t errsz)
{
	if (!json_object_is_type(v, json_type_array) ||
	    json_object_array_length(v) > SBX_MAX_HIDE) {
		snprintf(err, errsz,
		         "sandbox.workspace.%s must be an array of at most %d name patterns", key,
		         SBX_MAX_HIDE);
		return -EINVAL;
	}
	for (size_t i = 0; i < json_object_array_length(v); i++) {
		json_object *e = json_object_array_get_idx(v, i);
		const char *pat = json_object_get_string(e);
		if (!json_object_is_type(e, json_type_string) || !pat[0] || strlen(pat) > 255 ||
		    strchr(pat, '/')) {
			snprintf(err, errsz,
			         "sandbox.workspace.%s[%zu] must be a file name pattern "
			         "(no '/', 1 to 255 bytes)",
			         key, i);
			return -EINVAL;
		}
		if (!(list[*n] = strdup(pat)))
			return -ENOMEM;
		(*n)++;
	}
	return 0;
}

/* sandbox.workspace: {"mode": "overlay"|"none", "hide": [patterns added
 * to the defaults], "hideReplacingDefaults": [patterns used instead of
 * the defaults], "maxEntries": n}. */
static int workspace_config(json_object *section, struct sbx_config *c, char *err, size_t errsz)
{
	json_object *ws = json_get(section, "workspace");
	c->workspace_on = true;
	if (ws && !json_object_is_type(ws, json_type_object)) {
		snprintf(err, errsz, "sandbox.workspace must be an object");
		return -EINVAL;
	}
	json_object *hide = NULL, *instead = NULL;
	c->hide_max_entries = SBX_HIDE_DEFAULT_MAX_ENTRIES;
	if (ws) {
		json_object_object_foreach(ws, key, v)
		{
			if (strcmp(key, "mode") == 0) {
				const char *m = json_object_get_string(v);
				if (!json_object_is_type(v, json_type_string) ||
				    (strcmp(m, "overlay") != 0 && strcmp(m, "none") != 0)) {
					snprintf(err, errsz,
					         "sandbox.workspace.mode must be \"overlay\" or "
					         "\"none\"");
					return -EINVAL;
				}
				c->workspace_on = strcmp(m, "overlay") == 0;
			} else if (strcmp(key, "hide") == 0) {
				hide = v;
			} else if (strcmp(key, "hideReplacingDefaults") == 0) {
				instead = v;
			} else if (strcmp(key, "maxEntries") == 0) {
				if (!json_object_is_type(v, json_type_int) ||
				    json_object_get_int64(v) < 1 ||
				    json_object_get_int64(v) > (int64_t)SBX_HIDE_MAX_MAX_ENTRIES) {
					snprintf(err, errsz,
					         "sandbox.workspace.maxEntries must be 1 to %lu",
					         SBX_HIDE_MAX_MAX_ENTRIES);
					return -EINVAL;
				}
				c->hide_max_entries = (unsigned long)json_object_get_int64(v);
			} else {
				snprintf(
				    err, errsz,
				    "sandbox.workspace.%s is not a workspace setting (mode, hide, "
				    "hideReplacingDefaults, maxEntries)",
				    key);
				return -EINVAL;
			}
		}
	}
	size_t ndef = 0;
	while (sbx_default_hide[ndef])
		ndef++;
	/* The defaults (or their replacement), then the additions. */
	char **list = calloc(ndef + 2 * SBX_MAX_HIDE + 1, sizeof(*list));
	if (!list)
		return -ENOMEM;
	size_t n = 0;
	int r = 0;
	if (instead)
		r = hide_patterns(instead, "hideReplacingDefaults", list, &n, err, errsz);
	else
		for (; n < ndef && r == 0; n++)
			if (!(list[n] = strdup(sbx_default_hide[n])))
				r = -ENOMEM;
	if (r == 0 && hide)
		r = hide_patterns(hide, "hide", list, &n, err, errsz);
	if (r < 0) {
		free_hide(list, n);
		return r;
	}
	c->hide = list;
	c->nhide = n;
	return 0;
}

/* sandbox.zygote (true or false) and sandbox.zygotePreload (module
 * names, which the zygote imports in its box; a failed import is only
 * logged). */
static int zygote_config(json_object *section, struct sbx_config *c, char *err, size_t errsz)
{
	c->zygote = SBX_ZYGOTE_DEFAULT;
	json_object *v = json_get(section, "zygote");
	if (v && !json_object_is_type(v, json_type_boolean)) {
		snprintf(err, errsz, "sandbox.zygote must be true or false");
		return -EINVAL;
	}
	if (v)
		c->zygote = json_object_get_boolean(v);
	v = json_get(section, "zygotePreload");
	if (!v)
		return 0;
	size_t n = json_object_is_type(v, json_type_array) ? json_object_array_length(v) : 0;
	bool ok = json_object_is_type(v, json_type_array) && n <= 256;
	for (size_t i = 0; ok && i < n; i++) {
		const char *m = json_object_get_string(json_object_array_get_idx(v, i));
		ok =
		    json_object_is_type(json_object_array_get_idx(v, i), json_type_string) &&
		    m[0] && strlen(m) < 128 && m[0] != '.' &&
		    strspn(m, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.") ==
		        strlen(m);
	}
	if (!ok) {
		snprintf(err, errsz,
		         "sandbox.zygotePreload must be an array of at most 256 module names "
		         "(such as \"numpy\" or \"matplotlib.pyplot\")");
		return -EINVAL;
	}
	return 0;
}

static int count(json_object *section, const char *key, uint64_t def, uint64_t *ret, char *err,
                 size_t errsz)
{
	json_object *v = json_get(section, key);
	if (!v) {
		*ret = def;
		return 0;
	}
	if (!json_object_is_type(v, json_type_int) || json_object_get_int64(v) < 0) {
		snprintf(err, errsz, "sandbox.%s must be a non-negative integer", key);
		return -EINVAL;
	}
	*ret = (uint64_t)json_object_get_int64(v);
	return 0;
}

/* The artifact directory: the config's, else the XDG cache's. */
static int artifact_dir(json_object *section, char **ret, char *err, size_t errsz)
{
	json_object *v = json_get(section, "artifactDir");
	char dir[PATH_MAX] = "";
	const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
	if (v) {
		const char *cfg = json_object_get_string(v);
		if (!json_object_is_type(v, json_type_string) || cfg[0] != '/' ||
		    strlen(cfg) >= sizeof(dir) - 64) {
			snprintf(err, errsz, "sandbox.artifactDir must be an absolute path");
			return -EINVAL;
		}
		snprintf(dir, sizeof(dir), "%s", cfg);
	} else if (xdg && xdg[0] == '/' && strlen(xdg) < sizeof(dir) - 128) {
		snprintf(dir, sizeof(dir), "%s/kiln-artifacts", xdg);
	} else if (home && home[0] == '/' && strlen(home) < sizeof(dir) - 128) {
		snprintf(dir, sizeof(dir), "%s/.cache/kiln-artifacts", home);
	}
	*ret = NULL;
	if (dir[0] && !(*ret = strdup(dir)))
		return -ENOMEM;
	return 0;
}

/* The environment, planned once: what the plan would refuse at every run
 * is refused here. (The languages of sandbox.languages are the language
 * registry's to check.) */
static int check_plans(json_object *section, const struct sbx_limits *lim, char *err, size_t errsz)
{
	json_object *langs = json_get(section, "languages");
	if (langs && !json_object_is_type(langs, json_type_object)) {
		snprintf(err, errsz, "sandbox.languages must be an object");
		return -EINVAL;
	}
	if (!json_get(section, "env"))
		return 0;
	struct sbx_plan_owned *po = NULL;
	int r = sbx_plan_build(sbx_host_get(), NULL, section, "bash", "", lim, &po, err, errsz);
	sbx_plan_free(po);
	/* -ENOENT: not installed here; the run says so. */
	return r == -EINVAL || r == -ENOMEM ? r : 0;
}

int sbx_config_resolve(json_object *section, struct sbx_config *ret, char *err, size_t errsz)
{
	struct sbx_config c = {0};
	err[0] = '\0';
	if (section && !json_object_is_type(section, json_type_object)) {
		snprintf(err, errsz, "sandbox must be an object");
		return -EINVAL;
	}
	if (section) {
		json_object_object_foreach(section, key, v)
		{
			(void)v;
			size_t i = 0;
			while (i < ARRAY_SIZE(known) && strcmp(known[i], key) != 0)
				i++;
			if (i == ARRAY_SIZE(known)) {
				snprintf(err, errsz, "sandbox.%s is not a sandbox setting", key);
				return -EINVAL;
			}
		}
	}
	/* sandbox.python: the interpreter python runs use (box/pyenv.h;
	 * whether it runs is found at each run, as the folder changes). */
	json_object *py = json_get(section, "python");
	if (py &&
	    (!json_object_is_type(py, json_type_string) || json_object_get_string(py)[0] != '/')) {
		snprintf(err, errsz,
		         "sandbox.python must be the absolute path of a Python interpreter");
		return -EINVAL;
	}
	int r = sbx_limits_resolve(section, NULL, &c.limits, err, errsz);
	if (r < 0)
		return r;
	c.warm_boxes = true;
	json_object *v = json_get(section, "warmBoxes");
	if (v && !json_object_is_type(v, json_type_boolean)) {
		snprintf(err, errsz, "sandbox.warmBoxes must be true or false");
		return -EINVAL;
	}
	if (v)
		c.warm_boxes = json_object_get_boolean(v);
	if ((r = zygote_config(section, &c, err, errsz)) < 0)
		return r;
	v = json_get(section, "cgroup");
	if (v && !json_object_is_type(v, json_type_string)) {
		snprintf(err, errsz,
		         "sandbox.cgroup must be \"auto\", \"off\" or an absolute path");
		return -EINVAL;
	}
	if ((r = count(section, "artifactInlineBytes", 1u << 20, &c.artifact_inline_bytes, err,
	               errsz)) < 0 ||
	    (r = count(section, "artifactMaxFiles", 32, &c.artifact_max_files, err, errsz)) < 0 ||
	    (r = count(section, "artifactMaxBytes", 256u << 20, &c.artifact_max_bytes, err,
	               errsz)) < 0 ||
	    (r = count(section, "sessionIdleMs", 30 * 60 * 1000, &c.session_idle_ms, err, errsz)) <
	        0 ||
	    (r = count(section, "artifactDirMaxBytes", 1ull << 30, &c.artifact_dir_max_bytes, err,
	               errsz)) < 0 ||
	    (r = count(section, "artifactDirMaxAgeMs", 7ull * 24 * 3600 * 1000,
	               &c.artifact_dir_max_age_ms, err, errsz)) < 0)
		return r;
	/* Boxes are mostly waiting on something (I/O, a sleep, the client):
	 * two a core keeps the cores busy without a box per request. */
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	if ((r = count(section, "maxConcurrentRuns", cores > 1 ? 2 * (uint64_t)cores : 2,
	               &c.max_concurrent_runs, err, errsz)) < 0)
		return r;
	if (c.max_concurrent_runs < 1 || c.max_concurrent_runs > 4096) {
		snprintf(err, errsz, "sandbox.maxConcurrentRuns must be 1 to 4096");
		return -EINVAL;
	}
	if ((r = count(section, "maxQueuedRuns", 64, &c.max_queued_runs, err, errsz)) < 0)
		return r;
	if (c.max_queued_runs > 65536) {
		snprintf(err, errsz, "sandbox.maxQueuedRuns must be 0 to 65536");
		return -EINVAL;
	}
	if ((r = check_plans(section, &c.limits, err, errsz)) < 0)
		return r;
	if ((r = workspace_config(section, &c, err, errsz)) < 0)
		return r;
	if ((r = artifact_dir(section, &c.artifact_dir, err, errsz)) < 0) {
		free_hide(c.hide, c.nhide);
		return r;
	}
	c.section = section ? json_copy(section) : json_object_new_object();
	if (!c.section) {
		free(c.artifact_dir);
		free_hide(c.hide, c.nhide);
		return -ENOMEM;
	}
	*ret = c;
	return 0;
}

void sbx_config_release(struct sbx_config *c)
{
	json_object_put(c->section);
	free(c->artifact_dir);
	free_hide(c->hide, c->nhide);
	*c = (struct sbx_config){0};
}
