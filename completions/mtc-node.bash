# bash completion for mtc-node
_mtc_node()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	--peers-file|--peer-token-file|--gcs-token-file)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--dir|--state-dir|--backup|--tls-dir)
		COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--log-format)
		COMPREPLY=($(compgen -W 'text json' -- "$cur")); return ;;
	--background)
		COMPREPLY=($(compgen -W 'idle nice normal' -- "$cur")); return ;;
	--listen|--coordinator-url|--peer-url-template|--round-timeout|--heartbeat-timeout|\
	--nodes|--index|--host|--jax-port|--rank-timeout|\
	--heartbeat|--sync-interval|--quiet-time|--fail-wait)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W '--dir --listen --coordinator-url --peer-url-template
			--peers-file --backup --s3-endpoint --peer-token-file --gcs-token-file --tls-dir --state-dir --strict-ranks --insecure
			--round-timeout --heartbeat-timeout --heartbeat --sync-interval --quiet-time --no-prehash --background
			--nodes --index --host --jax-port --rank-timeout
			--verbose --log-format --fail-wait --once --version --help' -- "$cur"))
	fi
}
complete -F _mtc_node mtc-node
