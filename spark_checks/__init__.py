"""spark_checks: verification of client histories, locally or on Spark.

Readers for Jepsen/Knossos EDN, Porcupine's logs, JSON Lines and Parquet (`readers`), the
linearizability search (`linearizability`), Jepsen's Kafka anomaly checks (`kafka_checker`),
the local and Spark engines (`engine`; only it, `spark_session` and `spark_read`, the Spark
data-source reading the engine will move to, import pyspark) and the reports (`report`).
`kafkaspec verify` is its command.
"""
