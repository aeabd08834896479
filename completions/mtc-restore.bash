# bash completion for mtc-restore
_mtc_restore()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	--archive|-a|--gcs-token-file|--config|-c|--peer-token-file)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	--from|-f|--out|-o|--pin|--unpin|--dir|-d|--backup|-b)
		COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--compress)
		COMPREPLY=($(compgen -W 'zstd' -- "$cur")); return ;;
	--layout)
		COMPREPLY=($(compgen -W 'step hash' -- "$cur")); return ;;
	--log-format)
		COMPREPLY=($(compgen -W 'text json' -- "$cur")); return ;;
	--rank|-r|--parallel|-j|--threads|--slice-threshold|--slices|--coordinator-url|--address|--timeout|--heartbeat|--job|--name)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W '--from --job --name --rank --out --layout --archive --compress --verify --json --pin --unpin
			--force --gcs-token-file --s3-endpoint --parallel --threads --slice-threshold --slices --no-progress
			--dir --config --backup --coordinator-url --standalone --address --peer-token-file
			--timeout --heartbeat --verbose --quiet --log-format
			--version --help --usage' -- "$cur"))
	fi
}
complete -F _mtc_restore mtc-restore
