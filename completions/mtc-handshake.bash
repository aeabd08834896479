# bash completion for mtc-handshake
_mtc_handshake()
{
	local cur prev verb
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	verb=${COMP_WORDS[1]}
	if [ "$COMP_CWORD" -eq 1 ]; then
		COMPREPLY=($(compgen -W 'accept watch offer check rank --help --version' -- "$cur"))
		return
	fi
	case $prev in
	-d|--dir) COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--style) COMPREPLY=($(compgen -W 'orbax nemo' -- "$cur")); return ;;
	--framework) COMPREPLY=($(compgen -W 'orbax pytorch.distributed pytorch' -- "$cur")); return ;;
	--log-format) COMPREPLY=($(compgen -W 'text json' -- "$cur")); return ;;
	--timeout|--restore-timeout|--job-name|--node-rank|--nodes|--peer-ranks|--peers-per-node|\
	--assume-data-parallelism|--backup-interval-minutes|--backup-interval-steps|--workers-per-node|\
	--coordinator-url|--index|--host|--jax-port)
		return ;;
	--peer-token-file) COMPREPLY=($(compgen -f -- "$cur")); return ;;
	esac
	local common='--verbose --quiet --log-format --help --usage --version'
	case $verb in
	accept|watch) COMPREPLY=($(compgen -W "--dir --timeout --json $common" -- "$cur")) ;;
	offer) COMPREPLY=($(compgen -W "--dir --timeout --job-name --framework --node-rank --nodes
		--peer-ranks --peers-per-node --assume-data-parallelism --backup-interval-minutes
		--backup-interval-steps --workers-per-node --style --replace-stale --wait-restore
		--restore-timeout --rename --json $common" -- "$cur")) ;;
	rank) COMPREPLY=($(compgen -W "--dir --timeout --coordinator-url --index --host --jax-port
		--peer-token-file --json $common" -- "$cur")) ;;
	check)
		if [[ $cur == -* ]]; then
			COMPREPLY=($(compgen -W "--json $common" -- "$cur"))
		else
			COMPREPLY=($(compgen -f -- "$cur"))
		fi ;;
	esac
}
complete -F _mtc_handshake mtc-handshake
