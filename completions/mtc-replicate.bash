# bash completion for mtc-replicate
_mtc_replicate() {
	local cur prev verb
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	verb=${COMP_WORDS[1]}
	local common="-v --verbose -q --quiet --log-format --help --usage --version"
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W "digest commit gc serve push fetch run --help --version" -- "$cur"))
		return
	fi
	case $prev in
	--dir|-d|--tls-dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--config|-c) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--log-format) COMPREPLY=($(compgen -W "text json" -- "$cur")); return ;;
	--threads|--keep|-k|--quiet-time|--timeout|--wait) return ;;
	--peer-token-file|--gcs-token-file|--ready-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--framework) COMPREPLY=($(compgen -W "orbax pytorch pytorch.distributed" -- "$cur")); return ;;
	--backup|-b|--peers-file|--peer-token-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--coordinator-url|--nodes|--job|--session-timeout|--min-rate|--streams|--round-timeout|--heartbeat-timeout|--poll-timeout|--sync-interval|--heartbeat) return ;;
	--background) COMPREPLY=($(compgen -W "idle nice normal" -- "$cur")); return ;;
	--listen|-l|--peer|--peer-url-template|--from|--hash|-H|--meta|--step|-s|--retries|--max-*) return ;;
	esac
	case $verb in
	digest) COMPREPLY=($(compgen -W "--json --manifest --threads --framework $common" -- "$cur") $(compgen -f -- "$cur")) ;;
	commit) COMPREPLY=($(compgen -W "--dir --config --watch --wait --quiet-time --timeout --threads --json $common" -- "$cur")) ;;
	gc) COMPREPLY=($(compgen -W "--dir --config --keep --own-only --dry-run --grace --json $common" -- "$cur")) ;;
	serve) COMPREPLY=($(compgen -W "--dir --listen --peer-token-file --strict-ranks --insecure --tls-dir --ready-file --max-body --max-files --max-depth --max-connections --max-conns-per-ip --max-unauth --head-timeout --timeout --session-timeout --min-rate --coordinator --nodes --job --round-timeout --heartbeat-timeout --poll-timeout --background --json $common" -- "$cur")) ;;
	run) COMPREPLY=($(compgen -W "--dir --config --backup --coordinator-url --peer-url-template --peers-file --peer-token-file --gcs-token-file --s3-endpoint --sync-interval --quiet-time --heartbeat --timeout --threads --no-prehash --background --json $common" -- "$cur")) ;;
	push) COMPREPLY=($(compgen -W "--dir --config --step --peer --peer-url-template --peer-token-file --tls-dir --timeout --retries --streams --json $common" -- "$cur")) ;;
	fetch) COMPREPLY=($(compgen -W "--dir --from --hash --meta --peer-token-file --tls-dir --timeout --retries --streams --json $common" -- "$cur")) ;;
	*) COMPREPLY=($(compgen -W "$common" -- "$cur")) ;;
	esac
}
complete -F _mtc_replicate mtc-replicate
