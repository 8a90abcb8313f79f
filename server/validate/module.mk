# server/validate/module.mk: the validator's build rules. The tree-sitter
# runtime and grammars (python, bash, javascript) are fetched at pinned
# versions from the npm registry into build/grammars/ (sha256-checked, never
# committed) and compiled into every build (release, asan, fuzz): kiln links
# no tree-sitter library. The default rule files are embedded into a
# generated C file so kiln needs no install step.

VAL_LOCK      := server/validate/grammars.lock
VAL_GRAMMARS  := python bash javascript
VAL_GRAM_DIR  := $(BUILD)/grammars
VAL_STAMP     := $(VAL_GRAM_DIR)/.stamp
VAL_RULE_SRCS := $(sort $(wildcard server/validate/rules/*.scm server/validate/rules/*.json))
VAL_EMBED_C   := $(BUILD)/gen/validate/rules_embed.c

# The runtime's own api.h, not a system one: -isystem comes before
# /usr/include, and keeps our warning set off its header.
MODULE_CFLAGS += -isystem $(VAL_GRAM_DIR)/runtime/include
MODULE_DEPS += $(VAL_STAMP)
# runtime/lib.c includes every other file of the runtime (one unit, so
# its table lookups inline into the parse loop).
MODULE_OBJS += grammars/runtime/lib.o \
               $(foreach g,$(VAL_GRAMMARS),grammars/$(g)/parser.o grammars/$(g)/scanner.o) \
               gen/validate/rules_embed.o gen/validate/query_analysis.o

# The validator's objects include the fetched api.h, which -MMD does not
# list (-isystem): rebuild them when the pinned sources change.
VAL_SRCS := $(wildcard server/validate/*.c)
$(foreach b,$(BUILD) $(ASAN) $(FUZZB),$(VAL_SRCS:%.c=$(b)/%.o)): $(VAL_STAMP)

$(VAL_STAMP): $(VAL_LOCK) server/validate/fetch-grammars.sh $(wildcard server/validate/patches/*.patch)
	@sh server/validate/fetch-grammars.sh $(VAL_LOCK) $(VAL_GRAM_DIR)
	@touch $@

$(VAL_EMBED_C): $(VAL_RULE_SRCS) server/validate/embed-rules.sh
	@mkdir -p $(dir $@)
	@sh server/validate/embed-rules.sh $@ $(VAL_RULE_SRCS)

# tree-sitter's pattern analysis of each embedded query, made at build time
# by a generator linked with the release runtime and grammars
# (validate/query_analysis.h): a query from an embedded file skips it.
VAL_QA_C    := $(BUILD)/gen/validate/query_analysis.c
VAL_QA_TOOL := $(BUILD)/tools/query_analysis
$(VAL_QA_TOOL): server/tools/query_analysis.c $(BUILD)/grammars/runtime/lib.o \
		$(foreach g,$(VAL_GRAMMARS),$(BUILD)/grammars/$(g)/parser.o $(BUILD)/grammars/$(g)/scanner.o)
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) $(ALL_CFLAGS) -o $@ $^
$(VAL_QA_C): $(VAL_QA_TOOL) $(foreach g,$(VAL_GRAMMARS),server/validate/rules/$(g).scm)
	@mkdir -p $(dir $@)
	$(VAL_QA_TOOL) $@ $(foreach g,$(VAL_GRAMMARS),$(g)=server/validate/rules/$(g).scm)

# The runtime and the generated grammar code are not ours: build them
# without our warning set, and in the release build without assert()s
# (the runtime's cost 4% of a parse's instructions).
VAL_GRAM_CFLAGS = -std=gnu11 -w -I$(VAL_GRAM_DIR)/$(word 1,$(subst /, ,$*))/src \
                  -isystem $(VAL_GRAM_DIR)/runtime/include

$(BUILD)/grammars/%.o: $(VAL_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) -DNDEBUG $(VAL_GRAM_CFLAGS) -c $(VAL_GRAM_DIR)/$(dir $*)src/$(notdir $*).c -o $@

# The runtime is built alike in every build, as Debian's library was:
# optimised, without sanitizers (UBSan stops on its own slips, e.g. v0.20.7's
# query.c takes the address of an array's element -1, and the sanitized
# builds check 4 MiB snippets against the parse's time limit).
VAL_RT_OBJS := $(BUILD)/grammars/runtime/lib.o $(ASAN)/grammars/runtime/lib.o \
               $(FUZZB)/grammars/runtime/lib.o
$(VAL_RT_OBJS): $(VAL_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) -DNDEBUG -std=gnu11 -w -I$(VAL_GRAM_DIR)/runtime/src \
		-isystem $(VAL_GRAM_DIR)/runtime/include -c $(VAL_GRAM_DIR)/runtime/src/lib.c -o $@

$(ASAN)/grammars/%.o: $(VAL_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) $(VAL_GRAM_CFLAGS) -c $(VAL_GRAM_DIR)/$(dir $*)src/$(notdir $*).c -o $@
$(FUZZB)/grammars/%.o: $(VAL_STAMP)
	@mkdir -p $(dir $@)
	$(CLANG) -g -O1 -fsanitize=address $(VAL_GRAM_CFLAGS) -c $(VAL_GRAM_DIR)/$(dir $*)src/$(notdir $*).c -o $@

$(BUILD)/gen/%.o: $(BUILD)/gen/%.c
	$(CC) $(OPT_CFLAGS) $(ALL_CFLAGS) -c $< -o $@
$(ASAN)/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CC) $(ASAN_CFLAGS) $(ALL_CFLAGS) -c $< -o $@
$(FUZZB)/gen/%.o: $(BUILD)/gen/%.c
	@mkdir -p $(dir $@)
	$(CLANG) $(FUZZ_CFLAGS) $(ALL_CFLAGS) -Wno-unknown-warning-option -c $< -o $@

# The in-process timer tests/bench/validate.sh runs (not part of kiln).
$(BUILD)/bench/validate_bench: tests/bench/validate_bench.c $(BUILD)/libkiln.a
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libkiln.a $(ALL_LIBS)

# tree.c reads tree-sitter's subtrees with the pinned runtime's own
# internal headers (<src/subtree.h>), in every build.
$(foreach b,$(BUILD) $(ASAN) $(FUZZB),$(b)/server/validate/tree.o): \
	MODULE_CFLAGS += -isystem $(VAL_GRAM_DIR)/runtime

# test_ts_table compares lookups through the pinned runtime's own
# ts_language_lookup() (<src/language.h>).
$(ASAN)/tests/unit/test_ts_table: private ALL_CFLAGS += -isystem $(VAL_GRAM_DIR)/runtime
