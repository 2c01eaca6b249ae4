# Bash completion for the tuner program: commands, each command's flags (read from its --help), and the values of the
# flags that take a fixed set (ops, dtypes, strategies, formats, exports; devices from
# `tuner devices --json`). Source it (`source scripts/tuner-completion.bash`); `cmake --install`
# puts it where bash-completion finds it (share/bash-completion/completions/tuner).

_tuner_devices() {
  # Device specs this machine offers, read from `tuner devices --json` (its "device" fields).
  "${COMP_WORDS[0]}" devices --json 2>/dev/null | grep -o '"device": *"[^"]*"' | sed 's/.*"\([^"]*\)"$/\1/'
  echo "cuda:all"
}

_tuner() {
  local cur prev cmd
  cur="${COMP_WORDS[COMP_CWORD]}"
  prev="${COMP_WORDS[COMP_CWORD-1]}"
  cmd="${COMP_WORDS[1]}"
  local commands="devices tune query plan db export import report version"
  if [ "$COMP_CWORD" -eq 1 ]; then
    COMPREPLY=($(compgen -W "$commands --help --version" -- "$cur"))
    return
  fi
  case "$prev" in
    --op) COMPREPLY=($(compgen -W "gemm batched_gemm conv2d softmax layernorm" -- "$cur")); return ;;
    --dtype) COMPREPLY=($(compgen -W "f32 f16 bf16" -- "$cur")); return ;;
    --strategy) COMPREPLY=($(compgen -W "xgb ga random grid bo" -- "$cur")); return ;;
    --transfer) COMPREPLY=($(compgen -W "auto none" -- "$cur")); return ;;
    --format)
      if [ "$cmd" = import ]; then COMPREPLY=($(compgen -W "jsonl" -- "$cur"))
      else COMPREPLY=($(compgen -W "jsonl csv best" -- "$cur")); fi
      return ;;
    --export) COMPREPLY=($(compgen -W "megatron deepspeed torchtitan" -- "$cur")); return ;;
    --device) COMPREPLY=($(compgen -W "$(_tuner_devices)" -- "$cur")); return ;;
    --db|--out|--replay-out|--svg-dir|--model|--cluster|--kernel|--spec)
      COMPREPLY=($(compgen -f -- "$cur")); return ;;
  esac
  # Each command's flags as its own --help lists them, so the list cannot fall behind the program.
  local flags
  flags="$("${COMP_WORDS[0]}" "$cmd" --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ')"
  if [ "$cmd" = db ]; then
    # `tuner db` takes its subcommand first; the flags are merge's.
    if [ "$COMP_CWORD" -eq 2 ]; then COMPREPLY=($(compgen -W "merge" -- "$cur")); return; fi
    flags="$("${COMP_WORDS[0]}" db merge --help 2>/dev/null | grep -o -- '--[a-z][a-z0-9-]*' | sort -u | tr '\n' ' ')"
  fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
  else
    COMPREPLY=($(compgen -f -- "$cur"))
  fi
}

complete -F _tuner tuner
