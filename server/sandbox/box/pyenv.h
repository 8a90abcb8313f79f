/* pyenv.h: finding the project's own Python environment (a venv, a
 * conda environment, or an interpreter sandbox.python names), and what
 * of the host a box must show, read-only, to run it (docs/sandbox.md,
 * "The project's Python"). Runs in the server before clone(): a few
 * stat()s and one small read, safe on the loop and on job threads. */
#pragma once

#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>

/* What was found. */
struct sbx_pyenv {
	bool project; /* an environment was found; else Debian's python3 (source "system") */
	char python[PATH_MAX]; /* the interpreter the box runs (argv[0]), as found (not resolved) */
	char prefix[PATH_MAX]; /* the environment's folder (sys.prefix), or "" */
	/* Folders outside /usr and outside the workspace the box must
	 * show read-only: the environment itself, its base interpreter's
	 * prefix (pyvenv.cfg's home, where bin/python leads). "" unused. */
	char bind[3][PATH_MAX];
	char version[32];   /* pyvenv.cfg's version (or lib/pythonX.Y's), or "" */
	bool system_site;   /* pyvenv.cfg's include-system-site-packages = true */
	const char *source; /* "sandbox.python", "VIRTUAL_ENV", "CONDA_PREFIX",
	                     * "workspace .venv", "workspace venv", or "system" */
};

/* The interpreter Python code runs with, in this order: the config's
 * sandbox.python (a path to an interpreter, in section); the server's
 * VIRTUAL_ENV; its CONDA_PREFIX; workspace/.venv, then workspace/venv (a
 * folder with pyvenv.cfg; workspace NULL: none). Returns 1 with *ret
 * filled (ret->project), 0 with *ret saying "system" when none is named
 * or found; -EPERM or -ENOENT with a sentence in err naming the
 * environment and the fix when one is named or found but cannot be used
 * (a broken bin/python, a pyvenv.cfg whose home is not a folder holding
 * a python, a folder kiln will not show: the home folder or one that
 * holds it, /etc, ...). */
int sbx_pyenv_find(json_object *section, const char *workspace, struct sbx_pyenv *ret, char *err,
                   size_t errsz);
