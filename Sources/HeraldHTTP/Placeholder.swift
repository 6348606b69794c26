// HeraldHTTP: being written.
