"""dispatch"""
