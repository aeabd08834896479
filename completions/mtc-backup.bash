# bash completion for mtc-backup
_mtc_backup()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	--config|-c|--gcs-token-file)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--dir|-d|--to)
		COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--log-format)
		COMPREPLY=($(compgen -W 'text json' -- "$cur")); return ;;
	--name)
		COMPREPLY=($(compgen -W "$(date -u +%Y-%m-%d_%H-%M)" -- "$cur")); return ;;
	--step|-s|--parallel|-j|--threads|--slice-threshold|--slices|--stall-timeout)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W '--dir --config --step --to --name --gcs-token-file --s3-endpoint --parallel
			--threads --slice-threshold --slices --no-verify --no-progress --stall-timeout --json --verbose --quiet --log-format --version --help --usage' -- "$cur"))
	fi
}
complete -F _mtc_backup mtc-backup
