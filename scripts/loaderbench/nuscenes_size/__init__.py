"""The loaders at nuScenes size on a replica of the synthetic set (:mod:`.replica`): build time,
memory and a full pass (:mod:`.scale`, :mod:`.scale_report`); the test shards of K ranks (:mod:`.shards`)."""
