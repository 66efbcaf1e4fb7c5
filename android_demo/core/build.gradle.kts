// Plain Java library (no Android imports, no dependencies): tokenizer, head, cosine search, bundle reading.
// Offline, without Gradle: ../run_jvm_tests.sh FIXTURE_DIR (what CI runs).
plugins {
    `java-library`
}

java {
    sourceCompatibility = JavaVersion.VERSION_17
    targetCompatibility = JavaVersion.VERSION_17
}

dependencies {
    testImplementation("junit:junit:4.13.2")
}

tasks.test {
    // ./gradlew :core:test -PlwxFixtures=/path/to/fixtures (written by tools/android_parity.py)
    systemProperty("lwx.fixtures", providers.gradleProperty("lwxFixtures").getOrElse(""))
    testLogging { showStandardStreams = true }
}
