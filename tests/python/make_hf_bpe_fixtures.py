#!/usr/bin/env python3
"""Generates the checked-in byte-level BPE, GPT-2 and RoBERTa fixtures under
tests/fixtures/hf/ (run once with the interop venv; the tests then need no Python):

  bpe-gpt2/, bpe-roberta/, bpe-llama3/, bpe-smollm/, bpe-prefix-space/, bpe-llama2/,
  bpe-metaspace/      tokenizer.json (+ tokenizer_config.json)
                      of byte-level BPE tokenizers `tokenizers` trained on a small corpus,
                      one per family's pre-tokeniser and post-processor:
                        gpt2     ByteLevel (GPT-2's regex), no framing, <|endoftext|>
                        roberta  ByteLevel, RobertaProcessing <s> … </s>, <mask> lstrip
                        llama3   Split(Llama 3's regex) + ByteLevel(use_regex=False),
                                 ignore_merges, TemplateProcessing <|begin_of_text|> $A
                        smollm   Digits(individual) + ByteLevel, no framing
                        prefix-space  ByteLevel(add_prefix_space=True)
                        llama2   SentencePiece-style BPE (Llama 2, TinyLlama): normalizer
                                 Prepend("▁") + Replace(" ", "▁"), byte_fallback, <s> $A
                        metaspace  the same with a Metaspace(prepend_scheme="first")
                                 pre-tokenizer instead of the normalizer
  bpe-golden.json     the ids `tokenizers` gives each on a hostile corpus, without and with
                      the post-processor's special tokens
  tiny-gpt2/          a randomly initialised GPT2LMHeadModel folder (config.json,
                      model.safetensors, tokenizer.json, tokenizer_config.json)
  tiny-roberta/       a randomly initialised RobertaModel folder, same files
  tiny-roberta-classifier.safetensors   a RobertaForSequenceClassification head on it
  tiny-gpt2-expected.json, tiny-roberta-expected.json   texts, their ids, and
                      transformers' logits / hidden states

Usage: .interop-venv/bin/python tests/python/make_hf_bpe_fixtures.py
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
from tokenizers import processors, trainers
from transformers import (GPT2Config, GPT2LMHeadModel, RobertaConfig,
                          RobertaForSequenceClassification)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures", "hf")

LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")

GOLDEN_CORPUS = [
    "Hello, World!",
    "Café naïve résumé — Ångström Øre ÉCOLE",
    "emoji 😀👍🏽 and ❤️ hearts",
    "中文字符和日本語のテキスト、한국어",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "   many   spaces\tand\ttabs\nand\r\nnewlines   ",
    "https://example.com/path?query=1&x=2#frag and user@example.org",
    "numbers 3.14159, 1,000,000 and -42 or 1e-3 12345678",
    "don't can't won't it's I'M WE'LL they'RE you've he'd",
    "<s> literal specials </s> and <mask> in text <|endoftext|> <|begin_of_text|>x",
    "Ünïcödé ÀÉÎÕÜ ñ ç ß ﬁ",
    "a" * 120,
    "mixed-case MiXeD CaSe WORDS",
    "",
    " leading space and trailing  ",
    "\u200bzero\u200bwidth\u00adsoft hyphen\u00a0nbsp",
    "tabs\t\tthen\n\n\nlines\r\n",
    "The movie was great. The movie was terrible!",
]

TRAINING = GOLDEN_CORPUS[:9] + [
    "the movie was great and the acting was good",
    "the plot was terrible and the film was bad",
    "I loved it, I hated it, it was fine",
] * 3


def train(pre_tokenizer, specials, vocab_size=420, ignore_merges=False):
    tok = Tokenizer(models.BPE(ignore_merges=ignore_merges) if ignore_merges else models.BPE())
    tok.pre_tokenizer = pre_tokenizer
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=1, special_tokens=specials,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
                                  show_progress=False)
    tok.train_from_iterator(TRAINING, trainer)
    return tok


def gpt2_tokenizer():
    tok = train(pre_tokenizers.ByteLevel(add_prefix_space=False), ["<|endoftext|>"])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok, {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                 "unk_token": "<|endoftext|>"}


def prefix_space_tokenizer():
    # ByteLevel's add_prefix_space: a space before every piece between added tokens.
    tok = train(pre_tokenizers.ByteLevel(add_prefix_space=True), ["<|endoftext|>"])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok, {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>"}


def roberta_tokenizer():
    tok = train(pre_tokenizers.ByteLevel(add_prefix_space=False),
                ["<s>", "<pad>", "</s>", "<unk>"])
    tok.add_special_tokens([AddedToken("<mask>", lstrip=True, rstrip=False)])
    tok.post_processor = processors.RobertaProcessing(("</s>", tok.token_to_id("</s>")),
                                                      ("<s>", tok.token_to_id("<s>")),
                                                      add_prefix_space=False, trim_offsets=True)
    return tok, {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
                 "sep_token": "</s>", "cls_token": "<s>", "pad_token": "<pad>",
                 "mask_token": "<mask>"}


def llama3_tokenizer():
    pre = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(LLAMA3_PATTERN), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, trim_offsets=True, use_regex=False)])
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|reserved_special_token_0|>"]
    tok = train(pre, specials, ignore_merges=True)
    tok.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A", pair="<|begin_of_text|> $A <|begin_of_text|> $B:1",
        special_tokens=[("<|begin_of_text|>", tok.token_to_id("<|begin_of_text|>"))])
    return tok, {"bos_token": "<|begin_of_text|>", "eos_token": "<|end_of_text|>"}


def smollm_tokenizer():
    pre = pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                   pre_tokenizers.ByteLevel(add_prefix_space=False)])
    tok = train(pre, ["<|endoftext|>", "<|im_start|>", "<|im_end|>"])
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    return tok, {"bos_token": "<|endoftext|>", "eos_token": "<|endoftext|>",
                 "unk_token": "<|endoftext|>"}


def with_byte_fallback(tok, specials):
    # SentencePiece-style BPE (Llama 2, TinyLlama, Mistral): the 256 byte tokens <0x00>..
    # <0xFF> after the specials, for characters the vocabulary lacks. The trainer does not
    # make them, so the trained vocabulary is shifted behind them.
    state = json.loads(tok.to_str())
    vocab = {t: i for t, i in state["model"]["vocab"].items()}
    shifted = {}
    for t in specials:
        shifted[t] = len(shifted)
    for b in range(256):
        shifted["<0x%02X>" % b] = len(shifted)
    for t, _ in sorted(vocab.items(), key=lambda kv: kv[1]):
        if t not in shifted:
            shifted[t] = len(shifted)
    merges = [tuple(m.split(" ")) if isinstance(m, str) else tuple(m)
              for m in state["model"]["merges"]]
    model = models.BPE(vocab=shifted, merges=merges, unk_token="<unk>", fuse_unk=True,
                       byte_fallback=True)
    out = Tokenizer(model)
    if tok.normalizer is not None:
        out.normalizer = tok.normalizer
    if tok.pre_tokenizer is not None:
        out.pre_tokenizer = tok.pre_tokenizer
    out.add_special_tokens(specials)
    out.post_processor = processors.TemplateProcessing(
        single="<s> $A", pair="<s> $A <s> $B:1", special_tokens=[("<s>", shifted["<s>"])])
    return out


def sentencepiece_tokenizer(legacy):
    specials = ["<unk>", "<s>", "</s>"]
    tok = Tokenizer(models.BPE(unk_token="<unk>", fuse_unk=True, byte_fallback=True))
    if legacy:  # Llama 2 / TinyLlama's tokenizer.json: spaces replaced by a normalizer
        tok.normalizer = normalizers.Sequence([normalizers.Prepend("\u2581"),
                                               normalizers.Replace(" ", "\u2581")])
    else:       # newer Llama / Mistral files: a Metaspace pre-tokenizer
        tok.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581",
                                                     prepend_scheme="first", split=False)
    trainer = trainers.BpeTrainer(vocab_size=360, min_frequency=1, special_tokens=specials,
                                  limit_alphabet=70, show_progress=False)
    tok.train_from_iterator(TRAINING, trainer)
    tok = with_byte_fallback(tok, specials)
    if legacy:
        tok.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(),
                                         decoders.Fuse(), decoders.Strip(" ", 1, 0)])
    else:
        tok.decoder = decoders.Sequence([decoders.Metaspace(replacement="\u2581",
                                                            prepend_scheme="first", split=False),
                                         decoders.ByteFallback(), decoders.Fuse()])
    return tok, {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}


def save(tok, config, folder):
    os.makedirs(folder, exist_ok=True)
    tok.save(os.path.join(folder, "tokenizer.json"))
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump(config, f, indent=1, sort_keys=True)


def write_golden():
    cases = {}
    made = {}
    for name, make in (("bpe-gpt2", gpt2_tokenizer), ("bpe-roberta", roberta_tokenizer),
                       ("bpe-llama3", llama3_tokenizer), ("bpe-smollm", smollm_tokenizer),
                       ("bpe-prefix-space", prefix_space_tokenizer),
                       ("bpe-llama2", lambda: sentencepiece_tokenizer(True)),
                       ("bpe-metaspace", lambda: sentencepiece_tokenizer(False))):
        tok, config = make()
        save(tok, config, os.path.join(OUT, name))
        cases[name] = {
            "plain": [tok.encode(t, add_special_tokens=False).ids for t in GOLDEN_CORPUS],
            "framed": [tok.encode(t).ids for t in GOLDEN_CORPUS],
            "decoded": [tok.decode(tok.encode(t, add_special_tokens=False).ids)
                        for t in GOLDEN_CORPUS],
        }
        made[name] = (tok, config)
    with open(os.path.join(OUT, "bpe-golden.json"), "w") as f:
        json.dump({"texts": GOLDEN_CORPUS, "tokenizers": cases}, f, ensure_ascii=False)
    return made


def rounded(values):
    # Six significant digits: far inside the tests' 1e-4, and a third of the file size.
    if isinstance(values, list):
        return [rounded(v) for v in values]
    return float("%.6g" % values)


def rounded_outputs(expected):
    return {k: v if k in ("texts", "ids") else rounded(v) for k, v in expected.items()}


def randomise(model):
    # Random norms and biases too, so that a swapped weight/bias or norm shows.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
            elif ".ln_" in name or "LayerNorm" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))


TEXTS = [
    "The movie was really great!",
    "I hated it, but the acting was not bad.",
    "Café naïve résumé: don't 😀",
    "http://www.movie.com 123 films",
]


def write_tiny_gpt2(tok, tok_config):
    folder = os.path.join(OUT, "tiny-gpt2")
    save(tok, tok_config, folder)
    eos = tok.token_to_id("<|endoftext|>")
    config = GPT2Config(vocab_size=tok.get_vocab_size(), n_positions=48, n_embd=32, n_layer=2,
                        n_head=4, n_inner=None, activation_function="gelu_new",
                        layer_norm_epsilon=1e-5, bos_token_id=eos, eos_token_id=eos,
                        initializer_range=0.2)
    torch.manual_seed(14)
    model = GPT2LMHeadModel(config).eval()
    randomise(model)
    model.save_pretrained(folder, safe_serialization=True)
    rows = [[eos] + tok.encode(t).ids for t in TEXTS]
    T = max(len(r) for r in rows)
    ids = torch.tensor([r + [eos] * (T - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in rows])
    with torch.no_grad():
        out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    lengths = [len(r) for r in rows]
    expected = {
        "texts": TEXTS,
        "ids": rows,
        "logits": [row[:n] for row, n in zip(out.logits.tolist(), lengths)],
        "last_hidden": [row[n - 1] for row, n in zip(out.hidden_states[-1].tolist(), lengths)],
    }
    with open(os.path.join(OUT, "tiny-gpt2-expected.json"), "w") as f:
        json.dump(rounded_outputs(expected), f)


def write_tiny_roberta(tok, tok_config):
    folder = os.path.join(OUT, "tiny-roberta")
    save(tok, tok_config, folder)
    pad = tok.token_to_id("<pad>")
    config = RobertaConfig(vocab_size=tok.get_vocab_size(), hidden_size=32, num_hidden_layers=2,
                           num_attention_heads=4, intermediate_size=64,
                           max_position_embeddings=40 + pad + 1, type_vocab_size=1,
                           layer_norm_eps=1e-5, hidden_act="gelu", initializer_range=0.2,
                           pad_token_id=pad, bos_token_id=tok.token_to_id("<s>"),
                           eos_token_id=tok.token_to_id("</s>"), num_labels=3)
    torch.manual_seed(15)
    model = RobertaForSequenceClassification(config).eval()
    randomise(model)
    base = model.roberta
    # RobertaForSequenceClassification has no pooler; the folder is a RobertaModel with one.
    from transformers import RobertaModel
    full = RobertaModel(config).eval()
    randomise(full)
    full.load_state_dict(base.state_dict(), strict=False)
    full.config.architectures = ["RobertaModel"]
    for key in ("num_labels", "id2label", "label2id", "problem_type"):
        full.config.__dict__.pop(key, None)
    full.save_pretrained(folder, safe_serialization=True)
    head = model.classifier
    save_file({"classifier.dense.weight": head.dense.weight.contiguous(),
               "classifier.dense.bias": head.dense.bias.contiguous(),
               "classifier.out_proj.weight": head.out_proj.weight.contiguous(),
               "classifier.out_proj.bias": head.out_proj.bias.contiguous()},
              os.path.join(OUT, "tiny-roberta-classifier.safetensors"))
    rows = [tok.encode(t).ids for t in TEXTS]
    T = max(len(r) for r in rows)
    ids = torch.tensor([r + [pad] * (T - len(r)) for r in rows])
    mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in rows])
    with torch.no_grad():
        out = full(input_ids=ids, attention_mask=mask)
        logits = model(input_ids=ids, attention_mask=mask).logits
        token_logits = out.last_hidden_state @ full.embeddings.word_embeddings.weight.T
    lengths = [len(r) for r in rows]
    expected = {
        "texts": TEXTS,
        "ids": rows,
        "cls_hidden": out.last_hidden_state[:, 0].tolist(),
        "pooler_output": out.pooler_output.tolist(),
        "classifier_logits": logits.tolist(),
        "token_logits": [row[:n] for row, n in zip(token_logits.tolist(), lengths)],
    }
    with open(os.path.join(OUT, "tiny-roberta-expected.json"), "w") as f:
        json.dump(rounded_outputs(expected), f)


def main():
    made = write_golden()
    write_tiny_gpt2(*made["bpe-gpt2"])
    write_tiny_roberta(*made["bpe-roberta"])
    print("wrote fixtures to", os.path.normpath(OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
