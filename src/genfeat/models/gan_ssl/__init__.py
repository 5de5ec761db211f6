"""Complement-GAN semi-supervised classification (thesis Y §3.1)."""
