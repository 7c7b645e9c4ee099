"""``python -m localkube.images`` (``make images``): build what is missing, print each image."""

import sys

from localkube.images.build import main

sys.exit(main())
