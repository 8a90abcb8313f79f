# server/cli: the terminal front ends' line editor (kiln shell) is
# libedit from Debian (libedit-dev, in deps.sh's build list), included as
# <editline/readline.h>.
MODULE_LIBS += $(shell pkg-config --libs libedit 2>/dev/null || echo -ledit)
