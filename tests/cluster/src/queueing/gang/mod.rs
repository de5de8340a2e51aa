//! Gang scheduling: the training-operator's PodGroups and the Volcano / scheduler-plugins
//! stand-ins (see the module docs of each file).
