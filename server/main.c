/* main.c: the kiln command line. With no subcommand kiln speaks JSON-RPC
 * on stdin/stdout; subcommands are terminal tools over the same core. */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli.h"
#include "core/log.h"
#include "kiln.h"

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: kiln [OPTION...]                 serve JSON-RPC on stdin/stdout\n"
	    "       kiln mcp                          serve the Model Context Protocol on "
	    "stdin/stdout\n"
	    "                                         (tools run_code and validate_code; "
	    "docs/mcp.md)\n"
	    "       kiln replay [-v] TRANSCRIPT...    check transcripts against fresh servers\n"
	    "       kiln shell [--lang L]             interactive: intents become code you run\n"
	    "       kiln ask [--yes] \"INTENT\"         one intent, non-interactively\n"
	    "       kiln run [--lang L] [--timeout S] FILE|-\n"
	    "                                         run code in the sandbox, output as it comes\n"
	    "       kiln validate [--lang L] [--profile P] [--format text|json] FILE|-\n"
	    "                                         check code like a compiler (exit 0/1/2:\n"
	    "                                         allow/warn/deny; see kiln validate --help)\n"
	    "       kiln cache clear                  empty the model answer cache (llm.cache)\n"
	    "       kiln doctor [--json] [FOLDER]     check what kiln can promise on this "
	    "machine,\n"
	    "                                         with the fix for each degraded item\n"
	    "\n"
	    "kiln gives an editor a safe code interpreter: it validates code a model or a\n"
	    "person wrote and runs it, once approved, in a sandbox of its own making.\n"
	    "Editors start it as a child process and talk the LSP's JSON-RPC framing.\n"
	    "\n"
	    "Options (before a subcommand; --config and the log options apply to it too):\n"
	    "  --log-level LEVEL        error, warn (default), info or debug\n"
	    "  --log-file FILE          append logs to FILE instead of stderr\n"
	    "  --record FILE            write the session to FILE as a replayable transcript\n"
	    "  --max-message-size N     refuse messages over N bytes (default 64 MiB)\n"
	    "  --config FILE            config file (default $XDG_CONFIG_HOME/kiln/config.json)\n"
	    "  --stdio                  talk on stdin/stdout (the only transport; accepted\n"
	    "                           because LSP clients such as vscode-languageclient add it)\n"
	    "  --clientProcessId=PID    exit when process PID (the editor) is gone; initialize's\n"
	    "                           processId does the same\n"
	    "  -h, --help               show this help\n"
	    "  -V, --version            show the version\n"
	    "\n"
	    "Docs: docs/protocol.md (methods), docs/architecture.md, protocol/transcripts/.\n");
}

enum {
	OPT_LOG_LEVEL = 256,
	OPT_LOG_FILE,
	OPT_RECORD,
	OPT_MAX_MESSAGE,
	OPT_CONFIG,
	OPT_STDIO,
	OPT_CLIENT_PID,
};

static const struct option global_options[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {"log-level", required_argument, NULL, OPT_LOG_LEVEL},
    {"log-file", required_argument, NULL, OPT_LOG_FILE},
    {"record", required_argument, NULL, OPT_RECORD},
    {"max-message-size", required_argument, NULL, OPT_MAX_MESSAGE},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"stdio", no_argument, NULL, OPT_STDIO},
    {"clientProcessId", required_argument, NULL, OPT_CLIENT_PID},
    {NULL, 0, NULL, 0},
};

static int parse_size(const char *s, size_t *ret)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 10);
	if (errno || end == s || v == 0)
		return -EINVAL;
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (*end != '\0')
		return -EINVAL;
	*ret = (size_t)v;
	return 0;
}

/* stdout is the protocol: keep it aside on a private fd and point fd 1 at
 * stderr, so that a stray printf anywhere cannot corrupt the stream. */
static int take_protocol_fd(void)
{
	int fd = fcntl(1, F_DUPFD_CLOEXEC, 3);
	if (fd < 0)
		return -errno;
	if (dup2(2, 1) < 0)
		return -errno;
	return fd;
}

static int serve(const struct kiln_options *opts)
{
	int out = take_protocol_fd();
	if (out < 0) {
		log_error("cannot set stdout aside: %s", strerror(-out));
		return 1;
	}
	/* stdin must not leak into children either. */
	fcntl(0, F_SETFD, FD_CLOEXEC);
	return kiln_serve(opts, 0, out);
}

int main(int argc, char **argv)
{
	struct kiln_options opts = {.max_message = KILN_DEFAULT_MAX_MESSAGE};
	/* A client that goes away must be an EPIPE, not a silent death. */
	signal(SIGPIPE, SIG_IGN);

	int c;
	/* '+': stop at the first non-option, which names a subcommand. */
	while ((c = getopt_long(argc, argv, "+hV", global_options, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("kiln %s\n", KILN_VERSION);
			return 0;
		case OPT_LOG_LEVEL: {
			enum log_level level;
			if (log_level_parse(optarg, &level) < 0) {
				fprintf(stderr,
				        "kiln: unknown log level '%s' (error, warn, info, debug)\n",
				        optarg);
				return 2;
			}
			log_set_level(level);
			break;
		}
		case OPT_LOG_FILE: {
			int r = log_open_file(optarg);
			if (r < 0) {
				fprintf(stderr, "kiln: cannot open log file %s: %s\n", optarg,
				        strerror(-r));
				return 2;
			}
			break;
		}
		case OPT_CONFIG:
			opts.config_path = optarg;
			break;
		case OPT_RECORD:
			opts.record_path = optarg;
			break;
		case OPT_STDIO:
			break; /* stdin/stdout is what kiln speaks anyway */
		case OPT_CLIENT_PID: {
			char *end;
			errno = 0;
			long pid = strtol(optarg, &end, 10);
			if (errno || end == optarg || *end || pid <= 0 || pid > INT32_MAX) {
				fprintf(stderr, "kiln: --clientProcessId wants a process id\n");
				return 2;
			}
			opts.client_pid = (int)pid;
			break;
		}
		case OPT_MAX_MESSAGE:
			if (parse_size(optarg, &opts.max_message) < 0) {
				fprintf(
				    stderr,
				    "kiln: --max-message-size wants a size such as 65536 or 64M\n");
				return 2;
			}
			break;
		default:
			fprintf(stderr, "Try 'kiln --help'.\n");
			return 2;
		}
	}
	if (optind >= argc)
		return serve(&opts);

	const char *cmd = argv[optind];
	if (strcmp(cmd, "mcp") == 0) {
		if (optind + 1 < argc) {
			bool help = strcmp(argv[optind + 1], "--help") == 0 ||
			            strcmp(argv[optind + 1], "-h") == 0;
			fprintf(
			    help ? stdout : stderr,
			    "%sUsage: kiln [OPTION...] mcp\n"
			    "Serve the Model Context Protocol (versions 2025-06-18, 2025-11-25 and "
			    "2026-07-28)\non stdin/stdout as newline-delimited JSON-RPC; logs go "
			    "to "
			    "stderr.\nTools: run_code {language, code, timeoutSeconds?} and "
			    "validate_code\n{language, code, profile?}. See docs/mcp.md.\n",
			    help ? "" : "kiln mcp takes no arguments.\n");
			return help ? 0 : 2;
		}
		opts.mcp = true;
		return serve(&opts);
	}
	int sub_argc = argc - optind;
	char **sub_argv = argv + optind;
	for (size_t i = 0; i < cli_commands_count; i++)
		if (strcmp(cli_commands[i].name, cmd) == 0)
			return cli_commands[i].fn(&opts, sub_argc, sub_argv);
	fprintf(stderr, "kiln: unknown command '%s'. Try 'kiln --help'.\n", cmd);
	return 2;
}
