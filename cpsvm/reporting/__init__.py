"""What the learners show and print: while they train, the progress and the iterations'
lines (:mod:`.monitor`); once they have, why they stopped and their statistics
(:mod:`.statistics`). Below the commands, so that the scikit-learn estimators and the
cluster show the same; nothing heavy is imported (tqdm only when a bar is shown)."""
