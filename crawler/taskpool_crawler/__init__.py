"""The reference crawler: the handlers of the six crawler roles, apart from the worker core.

The queue does not need any of this; it is the example workload that `make demo` runs and the
end-to-end tests crawl (DESIGN.md section 4). Python does HTTP and files; the upserts, the
chaining, the diff and the source governance are SQL.

    client     the platform interface (list stores, fetch a menu, resolve a menu URL) and its
               HTTP implementation, used against the simulator (`pyworker simulator`)
    storage    raw menus saved gzip-compressed under TASKPOOL_STORAGE_DIR, and loaded back
    normalize  a menu body parsed into the product rows apply_menu_payload takes
    handlers   one handler per role, loaded with `--handlers pyworker.crawler.handlers`
    cli        `pyworker payloads list|show|diff`
    demo       what `make demo` runs (python -m pyworker.crawler.demo)
"""
