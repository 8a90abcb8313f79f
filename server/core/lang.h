/* lang.h: the language registry, the one table of what kiln knows about
 * each language it runs: the canonical name, aliases, file extensions, the
 * programs a #! line may name, the run argv and file name, and which of
 * the validator's grammars checks it. Every method, subcommand and client
 * resolves a language name here; nothing else keeps a list of names.
 *
 * The built-in languages are python, bash and javascript. The config's
 * "sandbox.languages" extends the registry (lang_configure): an entry
 * named after a language kiln knows (or one of its aliases) changes how it
 * runs; any other name adds a language that runs as its argv says and is
 * checked by the validator only when it names a grammar ("validator").
 *
 * The registry is process-wide (one per kiln process, as the config is)
 * and belongs to the loop thread: lang_configure is called at start-up
 * and when the config changes; a struct lang it returned stays valid until
 * the next lang_configure, so callers copy what they keep. The registry
 * knows nothing of tree-sitter: the validator maps lang->validator to its
 * own grammar table. */
#pragma once

#include <json-c/json.h>
#include <stdbool.h>
#include <stddef.h>

struct lang {
	const char *name;                /* canonical: "python", "bash", "javascript" */
	const char *const *aliases;      /* NULL-terminated: "py", "python3", ... */
	const char *const *extensions;   /* NULL-terminated, with the dot: ".py" */
	const char *const *interpreters; /* programs a #! line names: "python3", "node" */
	const char *const *argv;         /* NULL-terminated; "{file}" is the code's path */
	const char *file;                /* the code's file name in the box: "snippet.py" */
	const char *const *binds;        /* extra host paths in the box; a trailing '*' globs */
	const char *const *env;          /* extra environment, "KEY=VALUE" */
	/* The canonical name of the built-in language whose grammar and rules
	 * check this one, or NULL: the validator cannot check it. */
	const char *validator;
	bool builtin; /* one of the built-in languages (perhaps changed by the config) */
	/* Its runtime lives within an address-space limit (RLIMIT_AS), the
	 * sandbox's bound on shared memory without a memory cgroup: true for
	 * the built-in python and bash; false for node (V8 reserves
	 * gigabytes it never uses) and for config languages. A config entry
	 * that changes the interpreter (argv[0]) clears it. */
	bool address_space_limit;
};

/* Replace the config's part of the registry with languages, the config's
 * "sandbox.languages" object (borrowed; NULL or absent: the built-in
 * languages only). Each entry: "argv" (array of 1 to 32 strings, "{file}"
 * is the code's path) and "file" (a file name), both required; optional
 * "aliases", "extensions" (".rb"), "interpreters" (for #! lines), "binds",
 * "env" (object of strings) and "validator" (a language the validator
 * checks). -EINVAL with a sentence naming the member in err, and the
 * registry unchanged, when an entry is not valid; -ENOMEM. */
int lang_configure(json_object *languages, char *err, size_t errsz);

/* The language called name (canonical name or alias, any case), or NULL. */
const struct lang *lang_find(const char *name);

/* The language of a file by its name's extension, or NULL. */
const struct lang *lang_for_path(const char *path);

/* The language a "#!" first line names, or NULL: "#!/usr/bin/python3",
 * "#!/usr/bin/env node", "#!/usr/bin/env -S python3 -u",
 * "#!/usr/bin/python3.11". text need not be NUL-terminated. */
const struct lang *lang_for_shebang(const char *text, size_t len);

/* The language of a file: its extension, else its #! line; NULL. */
const struct lang *lang_for_file(const char *path, const char *text, size_t len);

/* The sentence for a name the registry does not know, naming every
 * language it does: "unknown language 'ruby' (kiln knows python (py,
 * python3, py3), bash (sh, shell, shellscript), javascript (js, node, nodejs, mjs))".
 * Returns buf. */
const char *lang_unknown(const char *name, char *buf, size_t size);

/* The sentence for code whose language lang_for_file could not tell (no
 * --lang, no extension the registry knows, no #! line it knows), naming
 * every language and its extensions: "cannot tell its language: no
 * extension kiln knows and no #! line; use --lang (kiln knows python (.py,
 * .pyw), bash (.sh, .bash), javascript (.js, .mjs, .cjs))". path NULL is
 * standard input, which has no extension. Guessing would run a Ruby file
 * as Python. Returns buf. */
const char *lang_untold(const char *path, char *buf, size_t size);

/* The canonical names, ", "-separated ("python, bash, javascript").
 * Returns buf. */
const char *lang_names(char *buf, size_t size);

/* The number of languages and the i-th of them, in table order (the
 * built-in ones first). */
size_t lang_count(void);
const struct lang *lang_at(size_t i);
