from workers.main import main

raise SystemExit(main())
