// The demo app: types text -> SentencePiece ids (":core") -> model.int8.pte with ExecuTorch -> head label +
// nearest bundled sentences, with the latency of each step. Not built in this repository's CI (no Android
// SDK there); see ../README.md.
plugins {
    id("com.android.application")
}

android {
    namespace = "ai.lwxedge.demo"
    compileSdk = 35

    defaultConfig {
        applicationId = "ai.lwxedge.demo"
        minSdk = 26          // java.nio.file (Files, Path) used by :core
        targetSdk = 35
        versionCode = 1
        versionName = "0.1.0"
        ndk {
            abiFilters += listOf("arm64-v8a", "x86_64")   // the ABIs the ExecuTorch AAR ships
        }
    }

    compileOptions {
        sourceCompatibility = JavaVersion.VERSION_17
        targetCompatibility = JavaVersion.VERSION_17
    }

    buildTypes {
        release {
            isMinifyEnabled = false
        }
    }

    androidResources {
        // the app copies these out of the APK once (ExecuTorch's Module.load needs a file path)
        noCompress += listOf("pte", "model", "npz", "lwxindex")
    }

    sourceSets.getByName("main").assets.srcDir(layout.buildDirectory.dir("generated/lwxAssets"))
}

dependencies {
    implementation(project(":core"))
    implementation("org.pytorch:executorch-android:${property("executorchVersion")}")
}

// Package the bundle (and a head, if given) as assets: model/{config.json, manifest.json, tokenizer.model,
// model.int8.pte} and head/{head.json, head.npz}, and the index file lwxIndex (if it exists) as
// index/notes.lwxindex. Nothing is converted: the app reads the SDK's own files.
val lwxBundle: String = providers.gradleProperty("lwxBundle").get()
val lwxHead = providers.gradleProperty("lwxHead")
val lwxIndex = providers.gradleProperty("lwxIndex")
val copyLwxAssets by tasks.registering(Copy::class) {
    val bundleDir = rootProject.file(lwxBundle)
    from(bundleDir) {
        include("config.json", "manifest.json", "tokenizer.model", "model.int8.pte")
        into("model")
    }
    if (lwxHead.isPresent) {
        from(rootProject.file(lwxHead.get())) {
            include("head.json", "head.npz")
            into("head")
        }
    }
    val indexFile = lwxIndex.map { rootProject.file(it) }.orNull
    if (indexFile != null && indexFile.isFile) {
        from(indexFile) {
            rename { "notes.lwxindex" }
            into("index")
        }
    } else if (indexFile != null) {
        logger.warn("lwxIndex: $indexFile does not exist; the app is built without an index (see README.md)")
    }
    into(layout.buildDirectory.dir("generated/lwxAssets"))
    doFirst {
        require(bundleDir.resolve("model.int8.pte").isFile) {
            "$bundleDir has no model.int8.pte: run lwx-edge export default --out android_demo/model, or pass -PlwxBundle=<bundle exported with lwx-edge export --int8>"
        }
    }
}
tasks.named("preBuild") { dependsOn(copyLwxAssets) }
