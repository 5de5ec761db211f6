"""The networks of one complement-GAN SSL run, chosen by the image shape (thesis Y §3.1.5, Table 3.1 "small
discriminator"; spec complement-gan.md §2.8): the MLPs of `mnist.py` for 28x28 images (MNIST, Fashion-MNIST), the
conv networks of `conv32.py` for 32x32 colour images (SVHN, CIFAR-10), with the reference's widths per dataset.

    build_networks(net, dataset, generator=True, encoder=False) -> (discriminator, generator | None, encoder | None)
"""

from __future__ import annotations

from dataclasses import dataclass

from torch import nn

from genfeat.data.images import COLOUR32
from genfeat.errors import ConfigError
from genfeat.models.gan_ssl.conv32 import Conv32Discriminator, Conv32Encoder, Conv32Generator
from genfeat.models.gan_ssl.mnist import MNISTDiscriminator, MNISTEncoder, MNISTGenerator

CONV_WIDTHS = {"svhn": (64, 128), "cifar10": (96, 192)}  # (n1, n2) of the reference (spec §2.8)
N_CLASSES = 10  # every dataset of the thesis's table has ten classes


@dataclass(frozen=True)
class GanNetConfig:
    d_z: int = 100
    disc_sizes: tuple[int, ...] = (1000, 500, 250, 250, 250)  # MNIST-shaped images: the MLP discriminator
    gen_hidden: int = 500
    conv_widths: tuple[int, ...] = ()  # 32x32 images: (n1, n2) of the conv discriminator; () = the dataset's
    conv_gen_width: int = 128  # 32x32 images: w of the generator (4w-2w-w channels) and VI encoder; thesis 128
    sigma_max: float = 1.0  # VI encoder's σ bound

    def __post_init__(self) -> None:
        if self.conv_gen_width < 1:
            raise ConfigError(f"model.conv_gen_width must be >= 1, got {self.conv_gen_width}")


def build_networks(net: GanNetConfig, dataset: str, generator: bool = True, encoder: bool = False
                   ) -> tuple[nn.Module, nn.Module | None, nn.Module | None]:
    """(discriminator, generator or None, VI encoder or None) for `dataset`'s image shape (module docstring)."""
    if dataset in COLOUR32:
        n1, n2 = net.conv_widths or CONV_WIDTHS[dataset]
        svhn = dataset == "svhn"
        disc = Conv32Discriminator(N_CLASSES, n1, n2, in_dropout=0.15 if svhn else 0.2, spatial_dropout=svhn)
        gen = Conv32Generator(net.d_z, width=net.conv_gen_width) if generator else None
        enc = Conv32Encoder(net.d_z, sigma_max=net.sigma_max, width=net.conv_gen_width) if encoder else None
        return disc, gen, enc
    disc = MNISTDiscriminator(N_CLASSES, 784, net.disc_sizes)
    gen = MNISTGenerator(net.d_z, net.gen_hidden) if generator else None
    enc = MNISTEncoder(net.d_z, 784, net.gen_hidden, net.sigma_max) if encoder else None
    return disc, gen, enc
