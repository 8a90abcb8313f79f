# server/sandbox/module.mk: kiln's Python programs for the box are
# embedded into a generated C file, so kiln needs no install step to
# write them into a box: the session driver (kiln_display.py,
# source_coding.py, then session_driver.py) and the one-shot runner
# (source_coding.py then oneshot.py, given kiln_display.py as an
# argument); source_coding.py alone too, for the validator's CPython
# worker (validate/pyworker.c). ($(BUILD)/gen/%.o rules:
# validate/module.mk.)

SBX_DRIVER_SRC := server/sandbox/guest/kiln_display.py server/sandbox/guest/session_driver.py \
                  server/sandbox/guest/oneshot.py server/sandbox/guest/source_coding.py
SBX_DRIVER_C   := $(BUILD)/gen/sandbox/driver_embed.c

MODULE_OBJS += gen/sandbox/driver_embed.o

$(SBX_DRIVER_C): $(SBX_DRIVER_SRC) server/sandbox/guest/embed-driver.sh
	@mkdir -p $(dir $@)
	@sh server/sandbox/guest/embed-driver.sh $@ \
		sbx_session_driver server/sandbox/guest/kiln_display.py \
			server/sandbox/guest/source_coding.py server/sandbox/guest/session_driver.py \
		-- sbx_oneshot_runner server/sandbox/guest/source_coding.py server/sandbox/guest/oneshot.py \
		-- sbx_display_module server/sandbox/guest/kiln_display.py \
		-- sbx_source_coding server/sandbox/guest/source_coding.py

# The zygote's program, embedded the same way: its parts one after the
# other, as one file in the box (zygote.py first: what the others use;
# zygote_serve.py last: it starts the program).
SBX_ZYGOTE_SRC := server/sandbox/guest/zygote.py server/sandbox/guest/zygote_pid1.py \
                  server/sandbox/guest/zygote_watch.py server/sandbox/guest/zygote_program.py server/sandbox/guest/zygote_serve.py
SBX_ZYGOTE_C   := $(BUILD)/gen/sandbox/zygote_embed.c

MODULE_OBJS += gen/sandbox/zygote_embed.o

$(SBX_ZYGOTE_C): $(SBX_ZYGOTE_SRC) server/sandbox/guest/embed-driver.sh
	@mkdir -p $(dir $@)
	@sh server/sandbox/guest/embed-driver.sh $@ sbx_zygote_program $(SBX_ZYGOTE_SRC)

# The seccomp programs a box loads, compiled with libseccomp at build time
# by a generator linked with the release build's filter.o (sandbox/host/
# filter.h, sbx_filter_embedded): a box's start takes them as they are.
SBX_BPF_C    := $(BUILD)/gen/sandbox/filter_bpf.c
SBX_BPF_TOOL := $(BUILD)/tools/seccomp_bpf

MODULE_OBJS += gen/sandbox/filter_bpf.o

$(SBX_BPF_TOOL): server/tools/seccomp_bpf.c $(BUILD)/server/sandbox/host/filter.o
	@mkdir -p $(dir $@)
	$(CC) $(OPT_CFLAGS) $(ALL_CFLAGS) -o $@ $^ $(PKG_LIBS)
$(SBX_BPF_C): $(SBX_BPF_TOOL)
	@mkdir -p $(dir $@)
	$(SBX_BPF_TOOL) $@
