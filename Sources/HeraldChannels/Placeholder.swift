// HeraldChannels: being written.
