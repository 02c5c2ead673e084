"""scikit-learn's 8x8 digits (Debian's python3-sklearn ships them) for the models trained in the tests:
train(model, ...) fits a small classifier in a few seconds of CPU, seeded, float64."""
import numpy as np
import torch
from sklearn.datasets import load_digits


def digits(n_test=297):
    """(x_train, y_train, x_test, y_test): images (N, 1, 8, 8) float64 scaled to [0, 1], labels int64; a fixed
    split (the last n_test images are the test set)."""
    data = load_digits()
    x = torch.from_numpy(data.images.astype(np.float64) / 16.0).unsqueeze(1)
    y = torch.from_numpy(data.target.astype(np.int64))
    return x[:-n_test], y[:-n_test], x[-n_test:], y[-n_test:]


def train(model, epochs=15, batch=64, lr=3e-3, seed=0):
    """Adam on cross-entropy, seeded; returns the test accuracy. The model maps (N, 1, 8, 8) to (N, 10) logits."""
    torch.manual_seed(seed)
    x, y, x_test, y_test = digits()
    optimiser = torch.optim.Adam(model.parameters(), lr=lr)
    generator = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        order = torch.randperm(len(x), generator=generator)
        for i in range(0, len(x), batch):
            idx = order[i:i + batch]
            optimiser.zero_grad()
            torch.nn.functional.cross_entropy(model(x[idx]), y[idx]).backward()
            optimiser.step()
    model.eval()
    with torch.no_grad():
        return float((model(x_test).argmax(1) == y_test).double().mean())
