"""The loaders at nuScenes size on a replica of the synthetic set (:mod:`.replica`): build time,
memory and a full pass (:mod:`.scale`, its checks :mod:`.scale_checks` and report
:mod:`.scale_report`), and the test shards of K ranks at val size (:mod:`.shards`)."""
