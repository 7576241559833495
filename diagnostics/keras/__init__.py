"""TensorFlow and Keras mechanics: batches, training copies, loading, measurement, devices, the private-attribute
reads."""
