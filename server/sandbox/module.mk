# server/sandbox/module.mk: the session driver (session_driver.py) is
# embedded into a generated C file, so kiln needs no install step to write
# it into a session's box. ($(BUILD)/gen/%.o rules: validate/module.mk.)

SBX_DRIVER_SRC := server/sandbox/session_driver.py
SBX_DRIVER_C   := $(BUILD)/gen/sandbox/driver_embed.c

MODULE_OBJS += gen/sandbox/driver_embed.o

$(SBX_DRIVER_C): $(SBX_DRIVER_SRC) server/sandbox/embed-driver.sh
	@mkdir -p $(dir $@)
	@sh server/sandbox/embed-driver.sh $@ $(SBX_DRIVER_SRC)

# The zygote's program (zygote.py), embedded the same way.
SBX_ZYGOTE_SRC := server/sandbox/zygote.py
SBX_ZYGOTE_C   := $(BUILD)/gen/sandbox/zygote_embed.c

MODULE_OBJS += gen/sandbox/zygote_embed.o

$(SBX_ZYGOTE_C): $(SBX_ZYGOTE_SRC) server/sandbox/embed-driver.sh
	@mkdir -p $(dir $@)
	@sh server/sandbox/embed-driver.sh $@ $(SBX_ZYGOTE_SRC) sbx_zygote_program
