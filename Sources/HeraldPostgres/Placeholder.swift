// HeraldPostgres: being written.
