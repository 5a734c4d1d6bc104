"""The embedded tiny policy: a local character tokenizer and a small Qwen2 causal LM.

Built with `tokenizers` and `transformers` alone (no Hub), saved with `save_pretrained`, so vLLM,
DeepSpeed and transformers load it by path exactly as they would load a Hub model.

Tokenizer: Qwen2-format byte-level BPE whose vocabulary is the 256 byte symbols plus the chat words
`system`, `user`, `assistant` (so one token per character of a question) and the specials below. Chat template (ChatML-shaped):

    <|im_start|>user\\nWhat is 3+5?<|im_end|>\\n<|im_start|>assistant\\n

The completion ends with `<|im_end|>` (the EOS token). Model head size is 32, one of the sizes
vLLM's CPU attention supports.
"""

from __future__ import annotations

from dataclasses import dataclass

PAD, EOS, BOS_CHAT = "<|endoftext|>", "<|im_end|>", "<|im_start|>"
# merged into one token each, as a real BPE vocabulary has them: the chat roles, and the words every
# question opens with ("\u0120" is byte-level BPE's space), so prompts are 6 tokens shorter. The
# answer's `\boxed{` stays 7 tokens on purpose: those positions come after the expression, and a
# 4-layer model computes in them before it writes the digits (merging "boxed" measurably cost it
# accuracy on the middle levels)
WORDS = ("assistant", "system", "user", "What", "\u0120is")
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


@dataclass(frozen=True)
class TinyModelConfig:
    """Shape of the tiny Qwen2 policy (head_dim = hidden_size / num_heads must be a vLLM CPU size)."""

    hidden_size: int = 128
    num_layers: int = 4
    num_heads: int = 4
    num_kv_heads: int = 2
    intermediate_size: int = 384
    max_positions: int = 192

    def __post_init__(self) -> None:
        supported = (32, 64, 80, 96, 112, 128, 160, 192, 224, 256, 512)
        head_dim = self.hidden_size // self.num_heads
        if self.hidden_size % self.num_heads or head_dim not in supported:
            raise ValueError(f"head_dim {self.hidden_size}/{self.num_heads} must be one of {supported} (vLLM CPU)")
        if self.num_heads % self.num_kv_heads:
            raise ValueError("num_heads must be a multiple of num_kv_heads")


def _word_merges(word: str) -> list[tuple[str, str]]:
    """Left-to-right BPE merges that build `word` from its characters: u+s, us+e, use+r."""
    return [(word[:i], word[i]) for i in range(1, len(word))]


def build_tokenizer():
    """A byte-level BPE tokenizer in the Qwen2 format (character vocabulary, merges for the chat words).

    It is built as a `Qwen2Tokenizer` because that is what `AutoTokenizer` (and so vLLM) rebuilds
    for a Qwen2 model folder: a tokenizer of any other shape would be re-read differently from disk
    than it was trained with. Digits are split one per token by Qwen2's pre-tokenizer regex.
    """
    from tokenizers import pre_tokenizers
    from transformers.models.qwen2.tokenization_qwen2 import Qwen2Tokenizer

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    merges = [m for w in WORDS for m in _word_merges(w)]
    vocab = {PAD: 0}
    for tok in [*alphabet, *("".join(m) for m in merges)]:
        vocab.setdefault(tok, len(vocab))
    tokenizer = Qwen2Tokenizer(
        vocab=vocab, merges=merges, unk_token=PAD, eos_token=EOS, pad_token=PAD,
        additional_special_tokens=[BOS_CHAT, EOS], clean_up_tokenization_spaces=False,
    )
    tokenizer.chat_template = CHAT_TEMPLATE
    return tokenizer


# A stand-in for real tokenizers (Llama 3 shaped), for tests of what the embedded one cannot show:
# it adds BOS when asked to add special tokens, its chat template writes BOS too, and turns end with
# an end-of-turn token that is not EOS.
STANDIN_BOS, STANDIN_EOS, STANDIN_EOT = "<s>", "</s>", "<|eot|>"
STANDIN_TEMPLATE = (
    "<s>{% for m in messages %}<|start|>{{ m['role'] }}\n{{ m['content'] }}<|eot|>{% endfor %}"
    "{% if add_generation_prompt %}<|start|>assistant\n{% endif %}"
)


def build_standin_tokenizer():
    """Byte-level tokenizer that adds BOS, with a template that writes BOS and ends turns with
    `<|eot|>` (EOS is `</s>`): saved with save_pretrained, AutoTokenizer and vLLM load it by path."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    alphabet = sorted(pre_tokenizers.ByteLevel.alphabet())
    specials = ["<pad>", STANDIN_BOS, STANDIN_EOS, STANDIN_EOT, "<|start|>"]
    vocab = {t: i for i, t in enumerate([*specials, *alphabet])}
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token="<pad>"))
    core.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)
    core.decoder = decoders.ByteLevel()
    core.add_special_tokens(specials)
    core.post_processor = processors.TemplateProcessing(single=f"{STANDIN_BOS} $A", pair=f"{STANDIN_BOS} $A $B",
                                                        special_tokens=[(STANDIN_BOS, vocab[STANDIN_BOS])])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=core, bos_token=STANDIN_BOS, eos_token=STANDIN_EOS,
                                        pad_token="<pad>", unk_token="<pad>",
                                        additional_special_tokens=[STANDIN_EOT, "<|start|>"])
    tokenizer.chat_template = STANDIN_TEMPLATE
    return tokenizer


def build_model(tokenizer, cfg: TinyModelConfig, seed: int, vocab_size: int | None = None):
    """A randomly initialized tiny Qwen2 for `tokenizer`; vocab_size pads the embedding past the
    tokenizer (a 150k vocabulary on a tiny hidden size stands in for a real model's head)."""
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(seed)
    bos = tokenizer.bos_token_id if tokenizer.bos_token_id is not None else tokenizer.convert_tokens_to_ids(BOS_CHAT)
    config = Qwen2Config(
        vocab_size=max(vocab_size or 0, len(tokenizer)), hidden_size=cfg.hidden_size, intermediate_size=cfg.intermediate_size,
        num_hidden_layers=cfg.num_layers, num_attention_heads=cfg.num_heads,
        num_key_value_heads=cfg.num_kv_heads, max_position_embeddings=cfg.max_positions,
        tie_word_embeddings=True, rope_theta=10000.0, torch_dtype="float32",
        bos_token_id=bos,
        eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
    )
    return Qwen2ForCausalLM(config)
