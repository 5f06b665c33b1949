"""What the training data allows: a count-based class bigram model, told the true word classes,
estimated from the first N training tokens of the bench's synthetic language.

It estimates the class transitions (add-0.01) and each word's share of its class (add-0.5) by
counting, and prints its exact test perplexity (first 20k test tokens) against the floor. If it
lands near the floor with the tokens a quality run sees, the run's distance from the floor is the
learner's (finding the classes, optimisation), not the data's.

Usage: python oracle_class_bigram.py ZIPF N   (e.g. 1.0 468480)
"""

import sys

import numpy as np

from bigvocab.data.corpora import load_corpus
from bigvocab.data.synthetic import SyntheticLanguage

VOCAB, CLASSES, CONCENTRATION = 10_000, 50, 0.1


def main() -> None:
    zipf, num_train = float(sys.argv[1]), int(sys.argv[2])
    spec = (f"synthetic:vocab_size={VOCAB},num_classes={CLASSES},zipf={zipf},concentration={CONCENTRATION},"
            "tokens=2000000,seed=0")
    corpus = load_corpus(spec, progress=False)
    language = SyntheticLanguage(VOCAB, CLASSES, zipf=zipf, concentration=CONCENTRATION, seed=0)
    index = {word: i for i, word in enumerate(language.words)}
    to_language = np.array([index[word] for word in corpus.vocab.words])  # corpus ids are frequency-ranked
    word_class = np.asarray(language.word_class)
    train = to_language[corpus.train[:num_train].numpy()]
    test = to_language[corpus.test[:20_000].numpy()]
    classes = word_class[train]
    transition = np.full((CLASSES, CLASSES), 0.01)
    np.add.at(transition, (classes[:-1], classes[1:]), 1)
    transition /= transition.sum(1, keepdims=True)
    counts = np.bincount(train, minlength=VOCAB) + 0.5
    emission = counts / np.bincount(word_class, weights=counts, minlength=CLASSES)[word_class]
    log_p = np.log(transition[word_class[test[:-1]], word_class[test[1:]]]) + np.log(emission[test[1:]])
    ppl = float(np.exp(-log_p.mean()))
    print(f"zipf {zipf}, {num_train:,} training tokens: class bigram with the true classes {ppl:.1f}, "
          f"floor {corpus.floor_perplexity:.1f}, {ppl / corpus.floor_perplexity:.3f}x")


if __name__ == "__main__":
    main()
