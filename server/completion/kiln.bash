# bash completion for kiln(1). Installed by `make install` into
# $(PREFIX)/share/bash-completion/completions/kiln, where bash-completion
# loads it when `kiln` is first completed. tests/suites/25-cli.sh checks
# that it offers every subcommand and option each `kiln ... --help` names.

_kiln() {
	local cur prev words cword
	_init_completion -n = || return

	local commands="mcp replay shell ask run validate cache doctor"
	local global="--log-level --log-file --record --max-message-size --config --stdio --clientProcessId= --help --version"
	local langs="python bash javascript py sh js node"

	# The subcommand: the first word that is not an option or an option's value.
	local i cmd=""
	for ((i = 1; i < cword; i++)); do
		case ${words[i]} in
		--log-level | --log-file | --record | --max-message-size | --config) ((i++)) ;;
		-*) ;;
		*) cmd=${words[i]}; break ;;
		esac
	done

	case $prev in
	--log-level) COMPREPLY=($(compgen -W "error warn info debug" -- "$cur")); return ;;
	--log-file | --record | --config | --server) _filedir; return ;;
	--lang | -l) COMPREPLY=($(compgen -W "$langs" -- "$cur")); return ;;
	--profile) COMPREPLY=($(compgen -W "strict standard relaxed off" -- "$cur")); return ;;
	--format) COMPREPLY=($(compgen -W "text json" -- "$cur")); return ;;
	--encoding) COMPREPLY=($(compgen -W "utf-8 utf-16 utf-32" -- "$cur")); return ;;
	--max-message-size | --timeout | --max-attempts | --session) return ;;
	esac

	local opts=""
	case $cmd in
	"")
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "$global" -- "$cur"))
			[[ ${COMPREPLY-} == *= ]] && compopt -o nospace
		else
			COMPREPLY=($(compgen -W "$commands" -- "$cur"))
		fi
		return
		;;
	mcp) opts="--help" ;;
	shell) opts="--lang --max-attempts --auto-repair --config --help" ;;
	ask) opts="--yes --allow-warn --json --session --lang --no-repair --auto-repair --max-attempts --config --help" ;;
	run) opts="--lang --timeout --json --apply --override --config --help" ;;
	validate) opts="--lang --profile --format --encoding --config --help" ;;
	replay) opts="--verbose --server --help" ;;
	doctor) opts="--json --help" ;;
	cache)
		[[ $i -eq $((cword - 1)) ]] && COMPREPLY=($(compgen -W "clear path" -- "$cur"))
		return
		;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W "$opts" -- "$cur"))
	else
		case $cmd in
		run | validate | replay) _filedir ;;
		doctor) _filedir -d ;;
		esac
	fi
} &&
	complete -F _kiln kiln
