-- New queue rows get ids ordered by their creation time (UUID version 7, RFC 9562: 48 bits of Unix
-- milliseconds, then the version, then random bits), instead of wholly random ones.
--
-- The claim and the record write each row's new versions into the queue's primary key: with random
-- ids, each lands on a leaf of its own, anywhere in an index as large as the queue. With a million
-- terminal rows the key is ~40 MB, and about 430 of its leaves a batch of 1,000 had to come from
-- outside shared buffers in the bench's growth line. The rows due now were created together, so with
-- these ids their entries sit on a few neighbouring leaves, already in memory.
--
-- An expression of built-in functions rather than a function of ours: every role that may insert into
-- the queue can evaluate it, with nothing to grant. An id given explicitly is kept as it is; ids stay
-- unique (74 random bits per millisecond). An id now tells when its row was created, to the
-- millisecond; the row carries that time anyway, and only its recipient sees the id.
alter table notification_queue alter column id set default
  encode(set_bit(set_bit(overlay(uuid_send(gen_random_uuid())
                                 placing substring(int8send(floor(extract(epoch from clock_timestamp()) * 1000)::bigint) from 3)
                                 from 1 for 6), 52, 1), 53, 1), 'hex')::uuid;
