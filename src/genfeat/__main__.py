from genfeat.cli import main

raise SystemExit(main())
