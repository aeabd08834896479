# bash completion for mtc-prune
_mtc_prune()
{
	local cur prev
	cur=${COMP_WORDS[COMP_CWORD]}
	prev=${COMP_WORDS[COMP_CWORD-1]}
	case $prev in
	--minutely|--hourly|--daily|--weekly|--monthly|--yearly)
		COMPREPLY=($(compgen -W 'always 0 1 7 24 52' -- "$cur")); return ;;
	--list|--config|-c|--gcs-token-file)
		COMPREPLY=($(compgen -f -- "$cur")); return ;;
	-p|--path)
		COMPREPLY=($(compgen -d -- "$cur")); return ;;
	--grace)
		COMPREPLY=($(compgen -W '30m 1h 6h 1d' -- "$cur")); return ;;
	--log-format)
		COMPREPLY=($(compgen -W 'text json' -- "$cur")); return ;;
	--include|--exclude|-I|-E|--include-list|--exclude-list|-t|--timestamp-pattern|--parallel|-j|--job)
		return ;;
	esac
	if [[ $cur == -* ]]; then
		COMPREPLY=($(compgen -W '--job --path --list --config --delete --dry-run --verify --grace
			--print-deleted --print-not-deleted --print-kept --json --silent --debug --gcs-token-file --s3-endpoint --parallel --minutely --hourly --daily --weekly
			--monthly --yearly --prefer-recent --relaxed --include --exclude --include-list
			--exclude-list --timestamp-pattern --utc --verbose --quiet --log-format --version
			--help --usage' -- "$cur"))
		return
	fi
	COMPREPLY=($(compgen -d -- "$cur"))
}
complete -F _mtc_prune mtc-prune
