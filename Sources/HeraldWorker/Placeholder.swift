// HeraldWorker: being written.
