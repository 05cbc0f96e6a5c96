#!/usr/bin/env python3
"""Generates the checked-in Hugging Face fixtures under tests/fixtures/hf/ (run once,
with the interop venv: tests/python/make-interop-venv.sh; the tests then need no Python
packages):

  tiny-bert/          a randomly initialised BertModel folder: config.json,
                      model.safetensors (with the I64 `embeddings.position_ids` buffer
                      real checkpoints such as all-MiniLM-L6-v2 carry), tokenizer.json
  tiny-bert-classifier.safetensors   a BertForSequenceClassification head on it
  tiny-bert-expected.json            texts, their ids from `tokenizers`, and
                      transformers' outputs: [CLS] hidden states, pooler outputs,
                      classifier logits, and hidden states times the word embeddings
                      (every position's hidden state, through one fixed product)
  golden-uncased/tokenizer.json, golden-cased/tokenizer.json   WordPiece tokenizers
                      `tokenizers` trained on the golden corpus (uncased with accent
                      stripping, and cased without), so that its pieces cover it
  tokenizer-golden.json   the ids `tokenizers` gives each on a corpus of accents,
                      emoji, CJK, long words, whitespace runs, URLs, numbers, specials
  tiny-llama/         a randomly initialised LlamaForCausalLM folder: grouped-query
                      attention (4 heads, 2 key/value heads), untied LM head, rope_theta
                      10000, no rope_scaling; config.json, model.safetensors, and a
                      byte-level BPE tokenizer.json `tokenizers` trained on a few lines
  tiny-llama-tied/    the same shapes with a tied LM head, one key/value head
                      (multi-query), rope_theta 500000 and linear rope_scaling (factor 2)
  tiny-llama-expected.json   for each folder: token ids (right-padded rows of different
                      lengths) and transformers' logits at every real position
  tiny-qwen2/         a randomly initialised Qwen2ForCausalLM folder (Llama's shapes with
                      random q/k/v biases; 2 key/value heads, untied head)
  tiny-qwen2-tied/    the same with a tied head, a key/value head per query head and
                      rope_theta 1000000
  tiny-mistral/       a randomly initialised MistralForCausalLM folder, 2 key/value heads,
                      sliding_window 3: shorter than two of the three rows, so the window's
                      mask changes their logits
  tiny-decoders-expected.json   for each of the three: ids and logits as for Llama
  tiny-phi3/          a randomly initialised Phi3ForCausalLM folder (fused qkv_proj and
                      gate_up_proj, a key/value head per query head, untied head)
  tiny-phi3-expected.json       its ids and logits as for Llama

Every fixture here was made with transformers 4.40.2 (the interop venv), except the group
"phi3": transformers 4.40.2 has no Phi-3, so tiny-phi3 was made with transformers 4.44.2,
installed with --no-deps into a throw-away folder over the interop venv (Debian's torch
1.13): pip install --no-deps --target /tmp/tf-new transformers==4.44.2, then
PYTHONPATH=/tmp/tf-new .interop-venv/bin/python tests/python/make_hf_fixtures.py phi3.
The groups are written separately, so that adding one leaves the others' bytes as they are:

Usage: .interop-venv/bin/python tests/python/make_hf_fixtures.py
           [bert|golden|llama|decoders|phi3]...   (no argument: all but phi3)
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file
from tokenizers import BertWordPieceTokenizer, ByteLevelBPETokenizer
from tokenizers.processors import BertProcessing
from transformers import (BertConfig, BertForSequenceClassification, BertTokenizerFast,
                          LlamaConfig, LlamaForCausalLM, MistralConfig, MistralForCausalLM,
                          Qwen2Config, Qwen2ForCausalLM)

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "fixtures", "hf")

# A small uncased vocabulary: specials, whole words, continuation pieces and characters,
# so that texts exercise whole words, splits and [UNK].
WORDS = """the a an movie film was is not bad good great terrible plot acting really very
i loved it hated and but this that , . ! ? ' - ( ) : / 1 2 3 0 http www com cafe naive
resume ##s ##ing ##ed ##ly ##er un ##believ ##able ##e ##r 日 本 語 ##a ##b ##c a b c d e
f g h i j k l m n o p q r s t u v w x y z""".split()
VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + list(dict.fromkeys(WORDS))

TEXTS = [
    "The movie was really great!",
    "I hated it, but the acting was not bad.",
    "Café naïve résumé: unbelievable plot",
    "日本語 text with zzzz unknown words",
    "http://www.movie.com 123 films",
]

GOLDEN_CORPUS = [
    "Hello, World!",
    "Café naïve résumé — Ångström Øre ÉCOLE",
    "emoji 😀👍🏽 and ❤️ hearts",
    "中文字符和日本語のテキスト、한국어",
    "supercalifragilisticexpialidocious antidisestablishmentarianism",
    "   many   spaces\tand\ttabs\nand\r\nnewlines   ",
    "https://example.com/path?query=1&x=2#frag and user@example.org",
    "numbers 3.14159, 1,000,000 and -42 or 1e-3",
    "don't can't won't it's",
    "[CLS] literal specials [SEP] and [MASK] in text",
    "Ünïcödé ÀÉÎÕÜ ñ ç ß ﬁ",
    "a" * 120,
    "mixed-case MiXeD CaSe WORDS",
    "",
    "\u200bzero\u200bwidth\u00adsoft hyphen",
]


def write_tiny_bert():
    folder = os.path.join(OUT, "tiny-bert")
    os.makedirs(folder, exist_ok=True)
    vocab_file = os.path.join(OUT, "vocab.txt.tmp")
    with open(vocab_file, "w", encoding="utf-8") as f:
        f.write("\n".join(VOCAB) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=vocab_file, do_lower_case=True)
    os.remove(vocab_file)
    tokenizer.backend_tokenizer.save(os.path.join(folder, "tokenizer.json"))

    config = BertConfig(vocab_size=len(VOCAB), hidden_size=32, num_hidden_layers=2,
                        num_attention_heads=4, intermediate_size=64,
                        max_position_embeddings=40, type_vocab_size=2,
                        layer_norm_eps=1e-12, hidden_act="gelu", initializer_range=0.2,
                        num_labels=3)
    torch.manual_seed(14)
    model = BertForSequenceClassification(config).eval()
    with torch.no_grad():
        # Random norms and biases too, so that a swapped weight/bias or norm shows.
        for name, p in model.named_parameters():
            if "LayerNorm.weight" in name:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn_like(p))
    base = model.bert
    config_dict = base.config.to_dict()
    config_dict["architectures"] = ["BertModel"]
    for key in ("num_labels", "id2label", "label2id", "problem_type"):
        config_dict.pop(key, None)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(config_dict, f, indent=2, sort_keys=True)
    tensors = {k: v.contiguous() for k, v in base.state_dict().items()}
    tensors["embeddings.position_ids"] = torch.arange(config.max_position_embeddings,
                                                      dtype=torch.int64).unsqueeze(0)
    save_file(tensors, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    save_file({"classifier.weight": model.classifier.weight.contiguous(),
               "classifier.bias": model.classifier.bias.contiguous()},
              os.path.join(OUT, "tiny-bert-classifier.safetensors"))

    encoded = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        out = base(input_ids=encoded["input_ids"], attention_mask=encoded["attention_mask"])
        logits = model(input_ids=encoded["input_ids"],
                       attention_mask=encoded["attention_mask"]).logits
        word = base.embeddings.word_embeddings.weight
        token_logits = out.last_hidden_state @ word.T
    lengths = encoded["attention_mask"].sum(1).tolist()
    expected = {
        "texts": TEXTS,
        "ids": [row[:n] for row, n in zip(encoded["input_ids"].tolist(), lengths)],
        "cls_hidden": out.last_hidden_state[:, 0].tolist(),
        "pooler_output": out.pooler_output.tolist(),
        "classifier_logits": logits.tolist(),
        # Only real positions: padded ones are not defined the same way in both.
        "token_logits": [row[:n] for row, n in zip(token_logits.tolist(), lengths)],
    }
    with open(os.path.join(OUT, "tiny-bert-expected.json"), "w") as f:
        json.dump(expected, f)
    return tokenizer


# Training text for the golden tokenizers: the corpus itself, held out partly (every
# other word of the last lines is left out), so that some words split into pieces and
# some are [UNK].
TRAINING = GOLDEN_CORPUS[:8] + ["the movie was great", "numbers words text and or"]


def write_golden():
    cases = {}
    for name, lowercase in (("golden-uncased", True), ("golden-cased", False)):
        tokenizer = BertWordPieceTokenizer(lowercase=lowercase, strip_accents=None,
                                           handle_chinese_chars=True, clean_text=True)
        tokenizer.train_from_iterator(TRAINING, vocab_size=300, min_frequency=1,
                                      limit_alphabet=60,
                                      special_tokens=["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"])
        # Set after training, once [CLS] and [SEP] have ids (BertProcessing; tiny-bert's
        # tokenizer.json has the TemplateProcessing form).
        tokenizer.post_processor = BertProcessing(("[SEP]", tokenizer.token_to_id("[SEP]")),
                                                  ("[CLS]", tokenizer.token_to_id("[CLS]")))
        os.makedirs(os.path.join(OUT, name), exist_ok=True)
        tokenizer.save(os.path.join(OUT, name, "tokenizer.json"))
        cases[name + "/tokenizer.json"] = [tokenizer.encode(t).ids for t in GOLDEN_CORPUS]
    with open(os.path.join(OUT, "tokenizer-golden.json"), "w") as f:
        json.dump({"texts": GOLDEN_CORPUS, "ids": cases}, f, ensure_ascii=False, indent=1)


# Token ids of the Llama parity batch: three rows of different lengths, right-padded
# (ids below the vocabulary of 272, 0 as padding).
LLAMA_ROWS = [
    [1, 45, 200, 7, 88, 130, 271, 3, 64, 99, 12, 150],
    [1, 5, 250, 33, 17, 222, 9],
    [1, 140, 60, 2],
]


def llama_tokenizer(folder, vocab_size):
    """A byte-level BPE tokenizer.json of `vocab_size` ids (256 bytes, specials, merges)."""
    tokenizer = ByteLevelBPETokenizer()
    tokenizer.train_from_iterator(GOLDEN_CORPUS[:9] + ["the movie was great"] * 4,
                                  vocab_size=vocab_size, min_frequency=1,
                                  special_tokens=["<unk>", "<s>", "</s>"])
    tokenizer.save(os.path.join(folder, "tokenizer.json"))
    # The start and end tokens scion frames a text with (its post-processor adds none).
    with open(os.path.join(folder, "tokenizer_config.json"), "w") as f:
        json.dump({"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>"}, f, indent=1,
                  sort_keys=True)


def write_tiny_llama(name, seed, **shape):
    return write_tiny_decoder(name, seed, LlamaConfig, LlamaForCausalLM, **shape)


def write_tiny_decoder(name, seed, config_class, model_class, **shape):
    """A random tiny Llama-shaped causal LM folder and its logits on LLAMA_ROWS."""
    folder = os.path.join(OUT, name)
    os.makedirs(folder, exist_ok=True)
    config = config_class(vocab_size=272, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=4, intermediate_size=48,
                          max_position_embeddings=64, rms_norm_eps=1e-5,
                          initializer_range=0.2, bos_token_id=1, eos_token_id=2,
                          pad_token_id=0, attn_implementation="eager", **shape)
    torch.manual_seed(seed)
    model = model_class(config).eval()
    with torch.no_grad():
        # Random norm weights, so that a swapped or missing norm shows, and random biases
        # (Qwen2's q/k/v; transformers initialises them to zero), so that a dropped or
        # misplaced bias shows. Llama has no biases: its fixtures are as they were.
        for pname, p in model.named_parameters():
            if "norm" in pname:
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif pname.endswith(".bias"):
                p.copy_(0.5 * torch.randn_like(p))
    model.save_pretrained(folder, safe_serialization=True)
    for extra in ("generation_config.json",):
        path = os.path.join(folder, extra)
        if os.path.exists(path):
            os.remove(path)
    llama_tokenizer(folder, config.vocab_size)

    T = max(len(r) for r in LLAMA_ROWS)
    ids = torch.tensor([r + [0] * (T - len(r)) for r in LLAMA_ROWS])
    mask = torch.tensor([[1] * len(r) + [0] * (T - len(r)) for r in LLAMA_ROWS])
    with torch.no_grad():
        logits = model(input_ids=ids, attention_mask=mask).logits
    return {
        "ids": LLAMA_ROWS,
        # Only real positions: padded ones are not defined the same way in both. Seven
        # significant digits: fp32's, far below the test's 1e-4.
        "logits": [[[float(f"{v:.7g}") for v in position] for position in row[:len(r)]]
                   for row, r in zip(logits.tolist(), LLAMA_ROWS)],
    }


def write_llama():
    expected = {
        "tiny-llama": write_tiny_llama("tiny-llama", 15, num_key_value_heads=2,
                                       tie_word_embeddings=False, rope_theta=10000.0),
        "tiny-llama-tied": write_tiny_llama("tiny-llama-tied", 16, num_key_value_heads=1,
                                            tie_word_embeddings=True, rope_theta=500000.0,
                                            rope_scaling={"type": "linear", "factor": 2.0}),
    }
    with open(os.path.join(OUT, "tiny-llama-expected.json"), "w") as f:
        json.dump(expected, f)


def write_decoders():
    expected = {
        "tiny-qwen2": write_tiny_decoder("tiny-qwen2", 17, Qwen2Config, Qwen2ForCausalLM,
                                         num_key_value_heads=2, tie_word_embeddings=False),
        "tiny-qwen2-tied": write_tiny_decoder("tiny-qwen2-tied", 18, Qwen2Config,
                                              Qwen2ForCausalLM, num_key_value_heads=4,
                                              tie_word_embeddings=True, rope_theta=1000000.0),
        "tiny-mistral": write_tiny_decoder("tiny-mistral", 19, MistralConfig, MistralForCausalLM,
                                           num_key_value_heads=2, tie_word_embeddings=False,
                                           sliding_window=3),
    }
    with open(os.path.join(OUT, "tiny-decoders-expected.json"), "w") as f:
        json.dump(expected, f)


def write_phi3():
    """Needs transformers 4.41 or later (see the module's docstring)."""
    from transformers import Phi3Config, Phi3ForCausalLM
    import transformers
    assert transformers.__version__ == "4.44.2", transformers.__version__
    expected = {"tiny-phi3": write_tiny_decoder("tiny-phi3", 20, Phi3Config, Phi3ForCausalLM,
                                                num_key_value_heads=4, tie_word_embeddings=False)}
    with open(os.path.join(OUT, "tiny-phi3-expected.json"), "w") as f:
        json.dump(expected, f)


GROUPS = {"bert": write_tiny_bert, "golden": write_golden, "llama": write_llama,
          "decoders": write_decoders, "phi3": write_phi3}


def main():
    chosen = sys.argv[1:] or [g for g in GROUPS if g != "phi3"]
    unknown = [g for g in chosen if g not in GROUPS]
    if unknown:
        print(f"unknown group(s) {unknown}; choose from {list(GROUPS)}", file=sys.stderr)
        return 2
    for group in chosen:
        GROUPS[group]()
    print("wrote", ", ".join(chosen), "fixtures to", os.path.normpath(OUT))
    return 0


if __name__ == "__main__":
    sys.exit(main())
