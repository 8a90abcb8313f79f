# kiln's build. `make` builds build/kiln; `make test` installs what the tests
# need, builds with AddressSanitizer and UndefinedBehaviorSanitizer, and runs
# every suite; `make run` starts the terminal session; `make bench` measures.
# Subsystems add their own rules in server/*/module.mk.

CC      ?= cc
CLANG   ?= clang
# libcurl gives only its headers: llm/curl_api.c loads it on first use.
PKGS    := json-c libseccomp libbsd libmd
CFLAGS_ONLY_PKGS := libcurl
WARN    := -std=gnu17 -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes \
           -Wstrict-prototypes -Wformat=2 -Wvla
CPPFLAGS_K := -Iserver -D_GNU_SOURCE
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) $(CFLAGS_ONLY_PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)

# Modules append to these.
MODULE_CFLAGS :=
MODULE_LIBS   :=
MODULE_OBJS   :=
MODULE_DEPS   :=

SRCS := $(shell find server -name '*.c' -not -path 'server/tools/*' | sort)
LIB_SRCS := $(filter-out server/main.c,$(SRCS))

BUILD  := build
ASAN   := build/asan
FUZZB  := build/fuzz

OPT_CFLAGS  := -O2 -g
ASAN_CFLAGS := -O1 -g -fno-omit-frame-pointer -fsanitize=address,undefined \
               -fno-sanitize-recover=undefined

-include $(wildcard server/*/module.mk)

ALL_CFLAGS = $(WARN) $(CPPFLAGS_K) $(PKG_CFLAGS) $(MODULE_CFLAGS)
ALL_LIBS   = $(MODULE_LIBS) $(PKG_LIBS) -lm

.PHONY: all deps deps-bench install uninstall deb dist test unit transcripts fuzz-smoke fuzz bench run clean format \
        format-check asan mutate
.DEFAULT_GOAL := all

all: deps-check $(BUILD)/kiln

# --- dependencies -----------------------------------------------------------
deps:
	@sh server/tools/deps.sh build test
deps-bench:
	@sh server/tools/deps.sh build test bench
# Fails with the exact command to run when a build package is missing.
deps-check:
	@sh server/tools/deps.sh --check build

# --- install -----------------------------------------------------------------
# The binary, kiln(1) and kiln-config(5), bash and zsh completions, the
# Neovim plugin, the Emacs package and (where AppArmor is) its profile;
# PREFIX (/usr/local) and DESTDIR as usual. server/tools/install.sh holds the
# list and says each variable.
PREFIX ?= /usr/local
install: all
	@PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" KILN="$(BUILD)/kiln" sh server/tools/install.sh install
uninstall:
	@PREFIX="$(PREFIX)" DESTDIR="$(DESTDIR)" sh server/tools/install.sh uninstall
# A Debian package of the same files (server/tools/deb.sh says its layout).
deb: all
	@KILN="$(BUILD)/kiln" sh server/tools/deb.sh
# A source tarball that builds with no network (the grammars' tarballs in it).
dist:
	@sh server/tools/dist.sh

# --- release build -----------------------------------------------------------
$(BUILD)/%.o: %.c | $(MODULE_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(BUILD)/libkiln.a: $(LIB_SRCS:%.c=$(BUILD)/%.o) $(MODULE_OBJS:%=$(BUILD)/%)
	@rm -f $@
	ar rcs $@ $^

$(BUILD)/kiln: $(BUILD)/server/main.o $(BUILD)/libkiln.a
	$(CC) $(OPT_CFLAGS) -o $@ $^ $(ALL_LIBS)

# --- sanitizer build (what the tests run) -----------------------------------
$(ASAN)/%.o: %.c | $(MODULE_DEPS)
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

$(ASAN)/libkiln.a: $(LIB_SRCS:%.c=$(ASAN)/%.o) $(MODULE_OBJS:%=$(ASAN)/%)
	@rm -f $@
	ar rcs $@ $^

$(ASAN)/kiln: $(ASAN)/server/main.o $(ASAN)/libkiln.a
	$(CC) $(ASAN_CFLAGS) -o $@ $^ $(ALL_LIBS)

asan: deps-check $(ASAN)/kiln

# --- unit tests (check) -------------------------------------------------------
UNIT_SRCS := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRCS:tests/unit/%.c=$(ASAN)/tests/unit/%)

$(ASAN)/tests/unit/%: tests/unit/%.c $(ASAN)/libkiln.a
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) $(ALL_CFLAGS) -Itests/unit -o $@ $< $(ASAN)/libkiln.a \
		$(ALL_LIBS) $(shell pkg-config --libs check)

unit-build: $(UNIT_BINS)

# --- fuzzing (libFuzzer) ---------------------------------------------------
FUZZ_SRCS := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_BINS := $(FUZZ_SRCS:tests/fuzz/%.c=$(FUZZB)/%)
FUZZ_CFLAGS := -g -O1 -fsanitize=fuzzer-no-link,address,undefined
# clang flags libseccomp's SCMP_A0() initialisers, which leave a member to
# its zero default on purpose.
CLANG_NOWARN := -Wno-unknown-warning-option -Wno-missing-field-initializers

$(FUZZB)/%.o: %.c | $(MODULE_DEPS)
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) $(ALL_CFLAGS) $(CLANG_NOWARN) -MMD -MP -c $< -o $@

$(FUZZB)/libkiln.a: $(LIB_SRCS:%.c=$(FUZZB)/%.o) $(MODULE_OBJS:%=$(FUZZB)/%)
	@rm -f $@
	ar rcs $@ $^

$(FUZZB)/fuzz_%: tests/fuzz/fuzz_%.c $(FUZZB)/libkiln.a
	$(CLANG) -g -O1 -fsanitize=fuzzer,address,undefined $(ALL_CFLAGS) -o $@ $< \
		$(FUZZB)/libkiln.a $(ALL_LIBS)

fuzz-build: $(FUZZ_BINS)

# A longer run than the one in `make test`; crashes land in tests/fuzz/regressions/.
FUZZ_SECONDS ?= 300
fuzz: deps fuzz-build
	@sh tests/tools/fuzz.sh $(FUZZ_SECONDS)

# --- the two commands --------------------------------------------------------
test: deps
	@$(MAKE) --no-print-directory asan unit-build fuzz-build $(BUILD)/kiln
	@sh tests/run-all.sh

run: deps $(BUILD)/kiln
	@$(BUILD)/kiln shell

bench: deps-bench $(BUILD)/kiln
	@sh tests/bench/run.sh

# The mutation gate: each deliberate bug of tests/mutations/ must make the
# suites it names fail. Not part of `make test` (it takes long); run it
# before calling a change to the sandbox, validator, framing or secrets done.
mutate: deps
	@$(MAKE) --no-print-directory asan unit-build $(BUILD)/kiln
	@nice sh tests/tools/mutate.sh $(MUTATIONS)

# --- housekeeping -------------------------------------------------------------
format:
	clang-format -i $$(git ls-files -co --exclude-standard 'server/*.c' 'server/*.h' 'tests/unit/*.[ch]' 'tests/fuzz/*.c')
format-check:
	@sh tests/suites/05-format.sh

clean:
	rm -rf build

# Header dependencies of every object tree, also one named on the command
# line (make BUILD=/tmp/x): without them a changed header leaves stale objects.
-include $(sort $(shell find build $(BUILD) $(ASAN) $(FUZZB) -name '*.d' -type f 2>/dev/null))
