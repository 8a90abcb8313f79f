/* validate.c (cli): `kiln validate`: check files like a compiler would,
 * printing `file:line:col: severity: message [rule]` (or the JSON the
 * snippet/validate method answers) and exiting 0, 1 or 2 for allow, warn
 * or deny (3 when a file could not be checked at all). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/diags.h"
#include "config.h"
#include "core/buf.h"
#include "core/json.h"
#include "core/lang.h"
#include "core/position.h"
#include "core/util.h"
#include "core/visible.h"
#include "kiln.h"
#include "validate/validate.h"

#define EXIT_UNCHECKED 3

static void usage(FILE *out)
{
	fprintf(out,
	        "Usage: kiln validate [--lang L] [--profile P] [--format text|json]\n"
	        "                     [--encoding utf-8|utf-16|utf-32] [--config FILE] FILE|-...\n"
	        "\n"
	        "Checks code the way kiln checks every proposal: syntax (CPython for Python,\n"
	        "tree-sitter otherwise) and the policy rules of the profile (strict, standard,\n"
	        "relaxed, off; default from the config, else standard).\n"
	        "Prints file:line:col: severity: message [rule] (1-based line and column;\n"
	        "columns count code points unless --encoding says otherwise) or, with\n"
	        "--format json, {file, language, verdict, diagnostics} with LSP ranges (UTF-16\n"
	        "unless --encoding says otherwise). --lang: python, bash, javascript or an\n"
	        "alias (py, sh, js, node, ...); default from the file's extension, else its #!\n"
	        "line; with neither (and for - without a #! line) --lang is needed.\n"
	        "Exit status: 0 allow, 1 warn, 2 deny, 3 could not check.\n");
}

static int read_input(const char *path, struct buf *b)
{
	_cleanup_close_ int fd = -1;
	int in = 0;
	if (strcmp(path, "-") != 0) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return neg_errno();
		in = fd;
	}
	char chunk[65536];
	for (;;) {
		ssize_t n = read(in, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return neg_errno();
		if (n == 0)
			return 0;
		int r = buf_append(b, chunk, (size_t)n);
		if (r < 0)
			return r == -ENOBUFS ? -EFBIG : r;
	}
}

static int check_file(struct validator *v, const char *path, const char *lang, const char *profile,
                      bool json, enum pos_encoding enc)
{
	struct buf b;
	buf_init(&b, VAL_MAX_CODE);
	int r = read_input(path, &b);
	if (r < 0) {
		fputs("kiln validate: ", stderr);
		vis_fputs(stderr, path, 0);
		fprintf(stderr, ": %s\n",
		        r == -EFBIG ? "over the validator's size limit" : strerror(-r));
		buf_release(&b);
		return EXIT_UNCHECKED;
	}
	const char *code = b.data ? b.data : "";
	/* --lang, else the file's extension or #! line (the registry's
	 * reader, which kiln run uses too). */
	const struct lang *l =
	    lang ? lang_find(lang) : lang_for_file(strcmp(path, "-") ? path : NULL, code, b.len);
	if (!l) {
		char why[512];
		bool in = strcmp(path, "-") == 0;
		fputs("kiln validate: ", stderr);
		vis_fputs(stderr, path, 0);
		fputs(": ", stderr);
		fputs(lang_untold(in ? NULL : path, why, sizeof(why)), stderr);
		fputc('\n', stderr);
		buf_release(&b);
		return EXIT_UNCHECKED;
	}
	lang = l->name;
	json_object *diags = NULL;
	enum val_verdict verdict;
	char detail[256] = "";
	r = val_check(v, lang, code, b.len, profile, enc, &diags, &verdict, detail, sizeof(detail));
	buf_release(&b);
	if (r < 0) {
		fputs("kiln validate: ", stderr);
		vis_fputs(stderr, path, 0);
		fputs(": ", stderr);
		vis_fputs(stderr, detail[0] ? detail : strerror(-r), 0);
		fputc('\n', stderr);
		return EXIT_UNCHECKED;
	}
	if (json) {
		json_object *o = json_object_new_object();
		json_object_object_add(o, "file", json_object_new_string(path));
		json_object_object_add(o, "language", json_object_new_string(lang));
		json_object_object_add(o, "verdict",
		                       json_object_new_string(val_verdict_name(verdict)));
		json_object_object_add(o, "diagnostics", diags);
		vis_json_fputs(stdout, json_compact(o));
		putchar('\n');
		json_object_put(o);
	} else {
		cli_print_diagnostics(stdout, path, diags);
		json_object_put(diags);
	}
	return verdict == VAL_ALLOW ? 0 : verdict == VAL_WARN ? 1 : 2;
}

int cli_validate(const struct kiln_options *global, int argc, char **argv)
{
	static const struct option opts[] = {
	    {"lang", required_argument, NULL, 'l'},
	    {"profile", required_argument, NULL, 'p'},
	    {"format", required_argument, NULL, 'f'},
	    {"encoding", required_argument, NULL, 'e'},
	    {"config", required_argument, NULL, 'c'},
	    {"help", no_argument, NULL, 'h'},
	    {NULL, 0, NULL, 0},
	};
	const char *lang = NULL, *profile = NULL, *format = "text", *enc_name = NULL;
	const char *config_path = global->config_path;
	int c;
	/* 0, not 1: glibc then resets all of getopt's state from main's parse. */
	optind = 0;
	while ((c = getopt_long(argc, argv, "l:p:f:e:c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'l':
			lang = optarg;
			break;
		case 'p':
			profile = optarg;
			break;
		case 'f':
			format = optarg;
			break;
		case 'e':
			enc_name = optarg;
			break;
		case 'c':
			config_path = optarg;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return EXIT_UNCHECKED;
		}
	}
	bool json = strcmp(format, "json") == 0;
	if (!json && strcmp(format, "text") != 0) {
		fprintf(stderr, "kiln validate: --format is text or json\n");
		return EXIT_UNCHECKED;
	}
	/* Text columns are for people (code points); JSON is LSP (UTF-16). */
	enum pos_encoding enc = json ? POS_UTF16 : POS_UTF32;
	if (enc_name && pos_encoding_parse(enc_name, &enc) < 0) {
		fprintf(stderr, "kiln validate: --encoding is utf-8, utf-16 or utf-32\n");
		return EXIT_UNCHECKED;
	}
	if (optind >= argc) {
		usage(stderr);
		return EXIT_UNCHECKED;
	}
	json_object *config = NULL;
	char detail[512] = "";
	if (config_load(config_path, &config, detail, sizeof(detail)) < 0) {
		fputs("kiln validate: ", stderr);
		vis_fputs(stderr, detail, 0);
		fputc('\n', stderr);
		return EXIT_UNCHECKED;
	}
	int r = lang_configure(json_get(config_section(config, "sandbox"), "languages"), detail,
	                       sizeof(detail));
	if (r < 0 || (lang && !lang_find(lang))) {
		cli_error("kiln validate",
		          r < 0 ? detail : lang_unknown(lang, detail, sizeof(detail)));
		json_object_put(config);
		lang_configure(NULL, NULL, 0);
		return EXIT_UNCHECKED;
	}
	struct validator *v = NULL;
	r = val_new(config_section(config, "validator"), &v);
	json_object_put(config);
	if (r < 0) {
		lang_configure(NULL, NULL, 0);
		fprintf(stderr, "kiln validate: the validator cannot start: %s\n", strerror(-r));
		return EXIT_UNCHECKED;
	}
	int worst = 0;
	for (int i = optind; i < argc; i++) {
		int e = check_file(v, argv[i], lang, profile, json, enc);
		if (e > worst)
			worst = e;
	}
	val_free(v);
	lang_configure(NULL, NULL, 0);
	return worst;
}
