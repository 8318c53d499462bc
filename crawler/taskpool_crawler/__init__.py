"""The reference crawler: the handlers of the six crawler roles, apart from the worker core.

The queue does not need any of this; it is the example workload that `make demo` runs and the
end-to-end tests crawl (DESIGN.md section 4). It is a package of its own (crawler/pyproject.toml)
built on pyworker's public interfaces: it plugs its handlers in through the `pyworker.handlers`
entry points and its commands through `pyworker.commands`; pyworker never imports it. Python
does HTTP, files and buckets; the upserts, the chaining, the diff and the source governance are SQL.

    client     the platform interface (list stores, fetch a menu, resolve a menu URL) and its
               HTTP implementation, used against the simulator (`pyworker simulator`)
    storage    raw menus saved gzip-compressed in a directory or an S3 bucket (TASKPOOL_STORAGE),
               loaded back, removed; the generic objects (store_object, load_object) besides
    normalize  a menu body parsed into the product rows apply_menu_payload takes
    db         the crawler's SQL (CrawlerDatabase, a pyworker Database with the crawler's calls)
    schema     where its Sqitch project is (the `pyworker.schemas` entry point)
    handlers   one handler per role, registered with every worker where the package is installed
    cli        `pyworker payloads list|show|diff` and `pyworker resync generate`
    simulator  the simulated menu platform (`pyworker simulator`)
    demo       what `make demo` runs (python -m taskpool_crawler.demo)
"""
