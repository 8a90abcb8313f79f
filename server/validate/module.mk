# server/validate/module.mk: the validator's build rules. The tree-sitter
# grammars (python, bash, javascript) are fetched at pinned versions from the
# npm registry into build/grammars/ (sha256-checked, never committed) and
# compiled into every build (release, asan, fuzz); the default rule files are
# embedded into a generated C file so kiln needs no install step.

VAL_LOCK      := server/validate/grammars.lock
VAL_GRAMMARS  := python bash javascript
VAL_GRAM_DIR  := $(BUILD)/grammars
VAL_STAMP     := $(VAL_GRAM_DIR)/.stamp
VAL_RULE_SRCS := $(sort $(wildcard server/validate/rules/*.scm server/validate/rules/*.json))
VAL_EMBED_C   := $(BUILD)/gen/validate/rules_embed.c

MODULE_LIBS += -ltree-sitter
MODULE_DEPS += $(VAL_STAMP)
MODULE_OBJS += $(foreach g,$(VAL_GRAMMARS),grammars/$(g)/parser.o grammars/$(g)/scanner.o) \
               gen/validate/rules_embed.o

$(VAL_STAMP): $(VAL_LOCK) server/validate/fetch-grammars.sh
	@sh server/validate/fetch-grammars.sh $(VAL_LOCK) $(VAL_GRAM_DIR)
	@touch $@

$(VAL_EMBED_C): $(VAL_RULE_SRCS) server/validate/embed-rules.sh
	@mkdir -p $(dir $@)
	@sh server/validate/embed-rules.sh $@ $(VAL_RULE_SRCS)

# Generated grammar code is not ours: build it without our warning set.
VAL_GRAM_CFLAGS = -std=gnu11 -w -I$(VAL_GRAM_DIR)/$(word 1,$(subst /, ,$*))/src

$(BUILD)/grammars/%.o: $(VAL_STAMP)
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) $(VAL_GRAM_CFLAGS) -c $(VAL_GRAM_DIR)/$(dir $*)src/$(notdir $*).c -o $@
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
