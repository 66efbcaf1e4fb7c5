// Android Studio project of the lwx-edge Android demo: ":core" is plain Java (no Android imports), ":app"
// the Android app that uses it with ExecuTorch. See README.md.
pluginManagement {
    repositories {
        google()
        mavenCentral()
        gradlePluginPortal()
    }
}

dependencyResolutionManagement {
    repositoriesMode.set(RepositoriesMode.FAIL_ON_PROJECT_REPOS)
    repositories {
        google()
        mavenCentral()
    }
}

rootProject.name = "lwx-edge-android-demo"
include(":core", ":app")
