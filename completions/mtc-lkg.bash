# bash completion for mtc-lkg
_mtc_lkg()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	--inventory|-i|--config|-c|--gcs-token-file|--peer-token-file)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--dir|-d|--backups|-b)
		COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--log-format)
		COMPREPLY=($(compgen -W 'text json' -- "$cur")); return ;;
	--peer|--peer-url-template|--peer-timeout|--rank|-r|--job|--nodes|--workers|--parallel|-j)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W '--inventory --dir --peer --peer-url-template
			--peer-token-file --peer-timeout --config --rank --job --backups --nodes
			--workers --gcs-token-file --s3-endpoint --parallel --json --verify --verbose --quiet --log-format
			--version --help --usage' -- "$cur"))
	fi
}
complete -F _mtc_lkg mtc-lkg
