#!/usr/bin/env python3
"""Writes the MiniLM example's task data, deterministically.

    python3 make_data.py        # from examples/minilm/data

ratings.jsonl  480 film reviews with a star rating from 1 to 5 (a regression target):
               strong praise 5, praise 4, mixed ("good ... but ... dull") 3, criticism 2,
               strong criticism 1
aspects.jsonl  480 film reviews, each about one or two of: acting, story, music (multi-
               label): the aspect nouns a review names say which

The sentences come from templates and word lists with a fixed seed, so the files are
identical on every run; the committed copies are what scion.yaml digests.
"""
import json
import random

RNG = random.Random(20261126)

GOOD = ["good", "great", "wonderful", "lovely", "charming", "fine"]
BAD = ["bad", "dull", "boring", "weak", "poor", "clumsy"]
STRONG = ["truly", "absolutely", "utterly", "really"]
ASPECT_NOUNS = {
    "acting": ["acting", "cast", "actors", "performances", "lead actress"],
    "story": ["story", "plot", "script", "ending", "dialogue"],
    "music": ["music", "soundtrack", "score", "songs", "sound"],
}
ALL_NOUNS = [n for nouns in ASPECT_NOUNS.values() for n in nouns]
PLURAL = {"actors", "performances", "songs"}


def was(noun):
    return "were" if noun in PLURAL else "was"


def rating_row():
    noun, other = RNG.sample(ALL_NOUNS, 2)
    stars = RNG.randint(1, 5)
    if stars == 5:
        text = f"the {noun} {was(noun)} {RNG.choice(STRONG)} {RNG.choice(GOOD)}."
    elif stars == 4:
        text = f"the {noun} {was(noun)} {RNG.choice(GOOD)}."
    elif stars == 3:
        text = (f"the {noun} {was(noun)} {RNG.choice(GOOD)} but the {other} {was(other)} "
                f"{RNG.choice(BAD)}.")
    elif stars == 2:
        text = f"the {noun} {was(noun)} {RNG.choice(BAD)}."
    else:
        text = f"the {noun} {was(noun)} {RNG.choice(STRONG)} {RNG.choice(BAD)}."
    return {"text": text, "stars": stars}


def aspect_row():
    aspects = sorted(RNG.sample(list(ASPECT_NOUNS), RNG.choice([1, 1, 2])))
    nouns = [RNG.choice(ASPECT_NOUNS[a]) for a in aspects]
    adjectives = [RNG.choice(GOOD + BAD) for _ in nouns]
    parts = [f"the {n} {was(n)} {a}" for n, a in zip(nouns, adjectives)]
    return {"text": " and ".join(parts) + ".", "aspects": aspects}


def write(name, rows):
    with open(name, "w") as f:
        for row in rows:
            f.write(json.dumps(row) + "\n")


write("ratings.jsonl", [rating_row() for _ in range(480)])
write("aspects.jsonl", [aspect_row() for _ in range(480)])
